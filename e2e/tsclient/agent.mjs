// Drives Yukta's agent MCP endpoint (POST /api/agent/v1/mcp) with the
// official MCP TypeScript SDK client and a supervisor credential, as a
// supervising agent would: list the tools (the SDK refuses an output schema
// it cannot read), read who it is, list its runs and read the log of the run
// given, long-poll its signals until it sees that run, and pause it with a
// directive.
//
// Usage: node agent.mjs <agent-mcp-url> <credential> <execution-id>
//
// Prints one JSON object on stdout, as client.mjs does; exit code 1 on any
// failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const [url, token, executionId] = process.argv.slice(2);
if (!url || !token || !executionId) {
  console.error('usage: node agent.mjs <agent-mcp-url> <credential> <execution-id>');
  process.exit(2);
}

const summary = { ok: false, step: 'connect', calls: [] };
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'yukta-e2e-ts-agent', version: '0.0.0' });
const validator = new AjvJsonSchemaValidator();
const outputSchemas = new Map();

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name}: tool error: ${res.content?.map((c) => c.text).join(' ')}`);
  const v = validator.getValidator(outputSchemas.get(name))(res.structuredContent);
  if (!v.valid) throw new Error(`${name}: structuredContent does not match the outputSchema: ${v.errorMessage}`);
  summary.calls.push(name);
  return res.structuredContent;
}

async function main() {
  await client.connect(transport);
  summary.server = client.getServerVersion();
  summary.step = 'listTools';
  const tools = (await client.listTools()).tools;
  summary.tools = tools.map((t) => t.name).sort();
  for (const t of tools) outputSchemas.set(t.name, t.outputSchema);

  summary.step = 'get_self';
  summary.self = (await call('get_self', {})).id;

  summary.step = 'list_owned_executions';
  const page = await call('list_owned_executions', { limit: 500 });
  summary.executions = page.executions.map((r) => r.executionId);
  summary.truncated = page.truncated;

  summary.step = 'get_execution_logs';
  summary.logs = (await call('get_execution_logs', { executionId, tail: 10 })).executionId;

  summary.step = 'read_signals';
  let after = '';
  const deadline = Date.now() + 30_000;
  for (;;) {
    const page = await call('read_signals', { after, waitSeconds: 3 });
    if (page.signals.some((s) => s.kind === 'EVENT' && s.signal.executionId === executionId)) break;
    if (Date.now() > deadline) throw new Error(`no EVENT of ${executionId} within 30 s`);
    after = page.cursor;
  }

  summary.step = 'send_directive';
  const res = await call('send_directive', {
    key: `ts-pause-${executionId}`,
    command: { type: 'PauseWorkflow', target: `execution:${executionId}` },
  });
  summary.directive = res.status;
  summary.ok = true;
}

main()
  .catch((err) => {
    summary.error = String(err?.message ?? err);
  })
  .finally(async () => {
    await client.close().catch(() => {});
    console.log(JSON.stringify(summary));
    process.exit(summary.ok ? 0 : 1);
  });
