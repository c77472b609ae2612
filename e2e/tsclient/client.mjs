// Drives Yukta's MCP endpoint with the official MCP TypeScript SDK client,
// the client most agent hosts are built on, as an agent would: connect,
// list and read the catalogue, then create a failing workflow, run it,
// diagnose it, fix it and retry the failed node until the run succeeds.
//
// Usage: node client.mjs <mcp-url> [api-key]
//
// Prints one JSON object on stdout: the summary e2e/tsclient_test.go checks.
// On any failure the object has ok=false, the step that failed and the
// error, and the exit code is 1.
//
// The SDK validates what it receives: tools/list against its schema of the
// protocol (a tool whose output schema it refuses makes listTools throw), and
// every structuredContent of a callTool against the tool's outputSchema. The
// script also validates each structuredContent itself, with the SDK's own
// JSON Schema validator, so the summary says so per call.

import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const [url, key] = process.argv.slice(2);
if (!url) {
  console.error('usage: node client.mjs <mcp-url> [api-key]');
  process.exit(2);
}

const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;

const summary = { ok: false, sdkVersion, step: 'connect', calls: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : undefined,
});
const client = new Client({ name: 'yukta-e2e-tsclient', version: '0.0.0' });
const validator = new AjvJsonSchemaValidator();
const outputSchemas = new Map();

// call calls a tool through the SDK (which validates structuredContent
// against the listed outputSchema), validates it again here, and records
// the outcome. A tool error (isError) is returned, not thrown, when allowed.
async function call(name, args, { allowError = false } = {}) {
  const res = await client.callTool({ name, arguments: args });
  const rec = { tool: name, isError: Boolean(res.isError), structured: res.structuredContent !== undefined };
  if (!res.isError) {
    const schema = outputSchemas.get(name);
    if (!schema) throw new Error(`${name}: the tool has no outputSchema`);
    if (!rec.structured) throw new Error(`${name}: no structuredContent`);
    const v = validator.getValidator(schema)(res.structuredContent);
    rec.validated = v.valid;
    if (!v.valid) throw new Error(`${name}: structuredContent does not match the outputSchema: ${v.errorMessage}`);
  }
  summary.calls.push(rec);
  if (res.isError && !allowError) {
    throw new Error(`${name}: tool error: ${res.content?.map((c) => c.text).join(' ')}`);
  }
  return res;
}

async function waitTerminal(sessionId, executionId) {
  const deadline = Date.now() + 30_000;
  let polls = 0;
  for (;;) {
    const res = await call('get_workflow_status', { sessionId, executionId });
    polls++;
    if (res.structuredContent.terminal) return { ...res.structuredContent, polls };
    if (Date.now() > deadline) throw new Error(`execution ${executionId} not terminal after 30 s`);
    await sleep(100);
  }
}

// session is a workflow start (MANUAL) -> work -> out (RESULT): work is a
// FAIL node at first, a LOG node once the agent fixed it.
function session(work) {
  return {
    session: {
      sessionId: 'tsclient',
      name: 'TypeScript SDK client',
      description: 'made by e2e/tsclient/client.mjs',
      workflows: [
        {
          workflowId: 'deploy',
          nodes: [
            { nodeId: 'start', type: 'MANUAL' },
            { nodeId: 'work', ...work },
            { nodeId: 'out', type: 'RESULT' },
          ],
          edges: [
            { source: 'start', target: 'work' },
            { source: 'work', target: 'out' },
          ],
        },
      ],
    },
  };
}

async function main() {
  await client.connect(transport); // initialize + notifications/initialized
  summary.protocolVersion = transport.protocolVersion ?? null;
  summary.server = client.getServerVersion();
  summary.capabilities = client.getServerCapabilities();

  summary.step = 'listTools';
  const tools = (await client.listTools()).tools;
  summary.toolCount = tools.length;
  summary.tools = tools.map((t) => t.name).sort();
  summary.toolsWithOutputSchema = tools.filter((t) => t.outputSchema).length;
  for (const t of tools) if (t.outputSchema) outputSchemas.set(t.name, t.outputSchema);

  summary.step = 'listPrompts';
  summary.prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();

  summary.step = 'listResources';
  summary.resources = (await client.listResources()).resources.map((r) => r.uri).sort();
  summary.resourceTemplates = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort();

  summary.step = 'readResource';
  const overview = await client.readResource({ uri: 'yukta://overview' });
  summary.overview = {
    contents: overview.contents.length,
    mimeType: overview.contents[0]?.mimeType ?? null,
    mentionsStatusTool: (overview.contents[0]?.text ?? '').includes('get_workflow_status'),
  };

  summary.step = 'plugins';
  const fail = await call('get_plugin_details', { type: 'FAIL' });
  summary.failPluginDefault = fail.structuredContent.configFields.find((f) => f.name === 'message')?.default ?? null;

  summary.step = 'create_session';
  const created = await call('create_session', session({ type: 'FAIL', config: { message: 'deploy target unreachable' } }));
  summary.created = created.structuredContent.created;

  summary.step = 'start_workflow';
  const started = await call('start_workflow', {
    sessionId: 'tsclient',
    workflowId: 'deploy',
    payload: { version: '1.2.3', replicas: 3 },
    idempotencyKey: 'tsclient-first',
  });
  const first = started.structuredContent.executionId;

  summary.step = 'status of the failing run';
  const failed = await waitTerminal('tsclient', first);
  summary.failedRun = {
    executionId: first,
    status: failed.status,
    actor: failed.actor ?? null,
    channel: failed.channel ?? null,
    failedNodes: failed.nodes.filter((n) => n.status === 'FAILURE').map((n) => n.nodeId),
    nodeError: failed.nodes.find((n) => n.nodeId === 'work')?.error ?? null,
  };

  summary.step = 'get_execution_logs';
  const logs = await call('get_execution_logs', { sessionId: 'tsclient', executionId: first, filterPattern: 'unreachable', tailLines: 50 });
  summary.failedRun.matchingLogLines = logs.structuredContent.returnedLines;

  summary.step = 'unknown execution';
  const unknown = await call(
    'get_workflow_status',
    { sessionId: 'tsclient', executionId: '00000000-0000-0000-0000-000000000000' },
    { allowError: true },
  );
  summary.unknownExecution = { isError: Boolean(unknown.isError), text: unknown.content?.[0]?.text ?? '' };

  summary.step = 'fix the session';
  const fixed = await call('create_session', session({ type: 'LOG', config: { message: 'deployed' } }));
  summary.replaced = fixed.structuredContent.created === false;

  summary.step = 'control_node RETRY';
  const retry = await call('control_node', {
    sessionId: 'tsclient',
    executionId: first,
    nodeId: 'work',
    action: 'RETRY',
    key: 'tsclient-retry-1',
    reason: 'the node was fixed',
  });
  const next = retry.structuredContent.resultExecutionIds[0];

  summary.step = 'status of the retried run';
  const done = await waitTerminal('tsclient', next);
  summary.retry = {
    commandStatus: retry.structuredContent.status,
    newExecutionId: next ?? null,
    status: done.status,
    restartOf: done.restartOf ?? null,
    fromNodeId: done.fromNodeId ?? null,
    result: done.result ?? null,
    nodes: Object.fromEntries(done.nodes.map((n) => [n.nodeId, n.status])),
  };

  // Issue 22's tools: a workflow pause refuses a start, its resume lets it
  // through; a stored key is created, listed, rotated and revoked.
  summary.step = 'control_workflow PAUSE_WORKFLOW';
  const paused = await call('control_workflow', { sessionId: 'tsclient', workflowId: 'deploy', action: 'PAUSE_WORKFLOW', reason: 'tsclient' });
  const refused = await call('start_workflow', { sessionId: 'tsclient', workflowId: 'deploy', payload: {} }, { allowError: true });
  summary.step = 'control_workflow RESUME_WORKFLOW';
  const resumed = await call('control_workflow', { sessionId: 'tsclient', workflowId: 'deploy', action: 'RESUME_WORKFLOW' });
  summary.workflowPause = {
    paused: paused.structuredContent.status,
    refused: Boolean(refused.isError),
    refusedText: refused.content?.map((c) => c.text).join(' ') ?? '',
    resumed: resumed.structuredContent.status,
  };

  summary.step = 'create_api_key';
  const key = await call('create_api_key', { name: 'ts-bot', role: 'VIEWER', ttl: '1h' });
  summary.step = 'list_api_keys';
  const keys = await call('list_api_keys', {});
  summary.step = 'rotate_api_key';
  const rotated = await call('rotate_api_key', { name: 'ts-bot' });
  summary.step = 'revoke_api_key';
  await call('revoke_api_key', { name: 'ts-bot' });
  const listed = JSON.stringify(keys.structuredContent);
  summary.apiKey = {
    secretPrefix: String(key.structuredContent.secret ?? '').slice(0, 3),
    rotatedDiffers: Boolean(rotated.structuredContent.secret) && rotated.structuredContent.secret !== key.structuredContent.secret,
    listed: listed.includes('"ts-bot"'),
    listHoldsSecret: listed.includes(String(key.structuredContent.secret)),
  };

  // Issue 23: a TASK node's task waits in its queue (the status tool shows
  // it), a SKIP over MCP passes it on with no worker, and the guide teaches
  // both ways of running your own code.
  summary.step = 'TASK session';
  await call('create_session', session({ type: 'TASK', config: { queue: 'ts-queue' } }));
  const queued = await call('start_workflow', { sessionId: 'tsclient', workflowId: 'deploy', payload: { v: 1 } });
  const taskRun = queued.structuredContent.executionId;
  summary.step = 'get_control_bus_status taskQueues';
  let queue = null;
  for (const deadline = Date.now() + 15_000; !queue && Date.now() < deadline; await sleep(50)) {
    const bus = await call('get_control_bus_status', { filterType: 'health' });
    queue = (bus.structuredContent.health?.scheduler?.taskQueues ?? []).find((q) => q.queue === 'ts-queue' && q.waiting === 1) ?? null;
  }
  summary.step = 'control_node SKIP of a TASK node';
  await call('control_node', { sessionId: 'tsclient', executionId: taskRun, nodeId: 'work', action: 'SKIP', key: 'tsclient-skip-task' });
  const skipped = await waitTerminal('tsclient', taskRun);
  summary.step = 'get_plugin_creation_guide';
  const guide = await call('get_plugin_creation_guide', {});
  const guideText = JSON.stringify(guide.structuredContent);
  summary.tasks = {
    queueSeen: queue !== null,
    skippedRunStatus: skipped.status,
    skippedRunResult: skipped.result ?? null,
    guideTeachesWorkers: guideText.includes('/api/worker/v1'),
    guideTeachesServer: guideText.includes('server.Main') || guideText.includes('WithNodeType'),
  };

  summary.step = 'done';
  summary.ok = true;
}

let code = 0;
try {
  await main();
} catch (err) {
  summary.error = String(err?.message ?? err);
  code = 1;
} finally {
  try {
    await client.close();
  } catch {
    // the summary says what failed
  }
}
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(code);
