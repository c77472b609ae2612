// The run view's controls. Each is an Action (role OPERATOR, as the spec's
// x-yukta-role says for every control operation): it sends one command and
// shows the server's answer — applied, accepted (a DRAIN still draining),
// held for a supervisor's review (202), or the problem it refused with.
import { useState } from "preact/hooks";
import { api, ok, type Schemas } from "../../app/client";
import { can } from "../../app/auth";
import { Action } from "../../components/action";
import { parseJson } from "../../components/json";
import type { Execution } from "./live";
import { finished } from "./live";

type CommandResult = Schemas["CommandResult"];
type ReviewTicket = Schemas["ReviewTicket"];

/** answer words the server's reply to a command. */
export function answer(r: CommandResult | ReviewTicket): string {
  if ("reviewId" in r) return `held for review ${r.reviewId} (${r.status}): ${r.message}`;
  const made = r.resultExecutionIds.length ? ` → ${r.resultExecutionIds.join(", ")}` : "";
  return `${r.status}: ${r.message}${made}`;
}

type Ids = { sessionId: string; executionId: string };

function runCommand(ids: Ids, body: Schemas["ExecutionCommand"]) {
  return async () =>
    answer(await ok(api.POST("/api/sessions/{sessionId}/executions/{executionId}/control", { params: { path: ids }, body })));
}

function nodeCommand(ids: Ids, nodeId: string, body: Schemas["NodeCommand"]) {
  return async () =>
    answer(
      await ok(api.POST("/api/sessions/{sessionId}/executions/{executionId}/nodes/{nodeId}/control", {
        params: { path: { ...ids, nodeId } },
        body,
      })),
    );
}

const modes = ["CANCEL", "DRAIN", "KILL"] as const;
type Mode = (typeof modes)[number];

const modeHelp: Record<Mode, string> = {
  CANCEL: "drop queued messages now; running plugins finish, their output is discarded",
  DRAIN: "take no new work from outside; queued messages finish, then STOPPED",
  KILL: "as CANCEL, and cancel the running plugins too",
};

/** RunControls: pause, resume, stop (mode), restart, restart from the selected node, stop-all. */
export function RunControls({ x, selected }: { x: Execution; selected?: string }) {
  const [mode, setMode] = useState<Mode>("CANCEL");
  const [reason, setReason] = useState("");
  if (!can("OPERATOR")) return null;
  const ids = { sessionId: x.sessionId, executionId: x.executionId };
  const why = reason.trim() || undefined;
  const done = finished(x.status);
  return (
    <section class="panel run-controls" aria-labelledby="run-controls-h">
      <h2 id="run-controls-h">Run controls</h2>
      <div class="row">
        <label for="run-reason">Reason</label>
        <input id="run-reason" value={reason} maxLength={1024} placeholder="optional, recorded with the command"
          onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      </div>
      <div class="toolbar">
        <Action label="Pause" role="OPERATOR" testid="run-pause" disabled={done || x.status === "PAUSED"}
          run={runCommand(ids, { action: "PAUSE", reason: why })} />
        <Action label="Resume" role="OPERATOR" testid="run-resume" disabled={done}
          run={runCommand(ids, { action: "RESUME", reason: why })} />
      </div>
      <div class="toolbar">
        <label for="stop-mode">Stop mode</label>
        <select id="stop-mode" value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value as Mode)}
          aria-describedby="stop-mode-help">
          {modes.map((m) => <option key={m} value={m}>{m}</option>)}
        </select>
        <span id="stop-mode-help" class="muted small">{modeHelp[mode]}</span>
      </div>
      <div class="toolbar">
        <Action label={`Stop (${mode})`} role="OPERATOR" kind="danger" testid="run-stop" disabled={done}
          confirm={`Stop this run with ${mode}? ${modeHelp[mode]}.`}
          run={runCommand(ids, { action: "STOP", mode, reason: why })} />
        <Action label="Stop all runs of the workflow" role="OPERATOR" kind="danger" testid="stop-all"
          confirm={`Stop EVERY unfinished run of workflow ${x.workflowId} with ${mode}?`}
          run={async () =>
            answer(await ok(api.POST("/api/sessions/{sessionId}/workflows/{workflowId}/stop", {
              params: { path: { sessionId: x.sessionId, workflowId: x.workflowId } },
              body: { mode, reason: why },
            })))} />
      </div>
      <div class="toolbar">
        <Action label="Restart" role="OPERATOR" testid="run-restart" title="a new run of the workflow's current definition with this run's payload"
          run={runCommand(ids, { action: "RESTART", reason: why })} />
        <Action label={selected ? `Restart from ${selected}` : "Restart from a node (select one)"} role="OPERATOR"
          testid="run-restart-from" disabled={!selected}
          title="a new run that re-feeds the node every message it received here; nodes not downstream of it start SKIPPED"
          run={runCommand(ids, { action: "RESTART_FROM_NODE", fromNodeId: selected, reason: why })} />
      </div>
    </section>
  );
}

/** NodeControls: the selected node's pause, resume, step, skip, retry, stop and breakpoint. */
export function NodeControls({ x, node }: { x: Execution; node: Execution["nodes"][number] }) {
  const [field, setField] = useState("");
  const [equals, setEquals] = useState("");
  const [condition, setCondition] = useState("");
  if (!can("OPERATOR")) return null;
  const ids = { sessionId: x.sessionId, executionId: x.executionId };
  const id = node.nodeId;
  const live = !finished(x.status);
  const eq = parseJson(equals);
  const bpBody = (): Schemas["BreakpointRequest"] => {
    if (condition.trim()) return { condition: condition.trim() };
    return { field: field.trim(), equals: eq.value };
  };
  const bpReady = condition.trim() !== "" || (field.trim() !== "" && equals.trim() !== "" && !eq.error);
  return (
    <div class="node-controls">
      <h3>Controls</h3>
      <div class="toolbar">
        <Action label="Pause" role="OPERATOR" testid="node-pause" disabled={!live}
          run={nodeCommand(ids, id, { action: "PAUSE" })} />
        <Action label="Resume" role="OPERATOR" testid="node-resume" disabled={!live}
          run={nodeCommand(ids, id, { action: "RESUME" })} />
        <Action label="Stop node" role="OPERATOR" kind="danger" testid="node-stop" disabled={!live}
          confirm={`Stop node ${id} for good? Its queued messages are dropped.`}
          run={nodeCommand(ids, id, { action: "STOP" })} />
      </div>
      <div class="toolbar">
        {node.stepMode ? (
          <>
            <Action label="Step" role="OPERATOR" kind="primary" testid="node-step" disabled={!live}
              run={nodeCommand(ids, id, { action: "STEP" })} />
            <Action label="Leave step mode" role="OPERATOR" testid="node-step-disable" disabled={!live}
              run={nodeCommand(ids, id, { action: "STEP_DISABLE" })} />
          </>
        ) : (
          <Action label="Step mode" role="OPERATOR" testid="node-step-enable" disabled={!live}
            title="the node takes one message per Step"
            run={nodeCommand(ids, id, { action: "STEP_ENABLE" })} />
        )}
        {node.skipped && !node.endedAt ? (
          <Action label="Unskip" role="OPERATOR" testid="node-unskip" disabled={!live}
            run={nodeCommand(ids, id, { action: "UNSKIP" })} />
        ) : (
          <Action label="Skip" role="OPERATOR" testid="node-skip" disabled={!live}
            title="pass messages on unchanged without running the plugin"
            run={nodeCommand(ids, id, { action: "SKIP" })} />
        )}
        <Action label="Retry in a new run" role="OPERATOR" testid="node-retry"
          title="RESTART_FROM_NODE for this node; allowed after the run finished"
          run={nodeCommand(ids, id, { action: "RETRY" })} />
      </div>
      <form class="breakpoint" aria-label={`Breakpoint of ${id}`} onSubmit={(e) => e.preventDefault()}>
        <h3>Breakpoint</h3>
        <p class="muted small">Pause the node before the first message whose field equals a value, or for which a CEL
          condition over <code>payload</code>, <code>execution</code> and <code>now</code> holds.</p>
        <div class="bp-grid">
          <label for="bp-field">Field</label>
          <input id="bp-field" value={field} placeholder="qty" maxLength={256} disabled={!!condition.trim()}
            onInput={(e) => setField((e.target as HTMLInputElement).value)} />
          <label for="bp-equals">Equals (JSON)</label>
          <input id="bp-equals" value={equals} placeholder="0" disabled={!!condition.trim()} aria-invalid={!!eq.error}
            aria-describedby={eq.error ? "bp-equals-error" : undefined}
            onInput={(e) => setEquals((e.target as HTMLInputElement).value)} />
          <label for="bp-condition">or Condition (CEL)</label>
          <input id="bp-condition" value={condition} placeholder="payload.qty > 10" maxLength={4096}
            onInput={(e) => setCondition((e.target as HTMLInputElement).value)} />
        </div>
        {eq.error && equals.trim() ? <p id="bp-equals-error" class="field-error">Equals is not JSON: {eq.error}</p> : null}
        <div class="toolbar">
          <Action label="Set breakpoint" role="OPERATOR" testid="bp-set" disabled={!live || !bpReady}
            run={async () =>
              answer(await ok(api.PUT("/api/sessions/{sessionId}/executions/{executionId}/nodes/{nodeId}/breakpoint", {
                params: { path: { ...ids, nodeId: id } },
                body: bpBody(),
              })))} />
          <Action label="Clear breakpoint" role="OPERATOR" testid="bp-clear" disabled={!live || !node.breakpoint}
            run={async () =>
              answer(await ok(api.DELETE("/api/sessions/{sessionId}/executions/{executionId}/nodes/{nodeId}/breakpoint", {
                params: { path: { ...ids, nodeId: id } },
              })))} />
        </div>
      </form>
    </div>
  );
}
