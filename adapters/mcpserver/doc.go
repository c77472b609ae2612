// Package mcpserver is the Model Context Protocol door into Yukta: 27 typed
// tools, two prompts and three resources over stateless streamable HTTP
// (go-sdk), for AI agents. It is thin: each tool authorizes the caller, calls
// the same application use case REST calls, and shapes the answer for a model
// reader (errors are sentences naming the next tool; log text is escaped and
// redacted). Authorization runs in the SDK's receiving middleware, after the
// request is decoded, so batches and odd encodings cannot split what is
// checked from what is executed; forbidden tools are hidden from tools/list
// and refused on call before any use case runs. The MCP SDK stays inside this
// package.
package mcpserver
