// The run view (/sessions/:sessionId/executions/:executionId): the DAG with
// each node's live status, counters and flags; the run's result, error, who
// started it and what it spent; every control with the server's answer; who
// sent which command (from the event stream); and the log with its filter.
// Live through the execution's event stream (resumed with Last-Event-ID
// after a drop), each burst of events answered by one coalesced re-read of
// the execution (live.ts): at most four reads and eight renders a second,
// however fast events come. The DAG is laid out once per shape and only
// restyled as statuses change (components/dag.tsx).
import "./page.css";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ok } from "../../app/client";
import { can } from "../../app/auth";
import { setQuery } from "../../app/router";
import { follow, type StreamState } from "../../app/sse";
import { Dag, type DagEdge, type DagNode } from "../../components/dag";
import { JsonView } from "../../components/json";
import { Loading, ProblemView } from "../../components/load";
import { Status, Time, duration, millis } from "../../components/status";
import { RunTabs } from "../../components/tabs";
import type { Page, PageProps } from "../page";
import { NodeControls, RunControls } from "./controls";
import { coalesce, finished, fold, newTally, type CommandSeen, type Execution, type StreamTally } from "./live";
import { Logs } from "./logs";

type Node = Execution["nodes"][number];

const minReadGapMs = 250;

function RunView({ params, query }: PageProps) {
  const { sessionId, executionId } = params as { sessionId: string; executionId: string };
  const selected = query.get("node") ?? undefined;
  const [x, setX] = useState<Execution>();
  const [error, setError] = useState<Error>();
  const [stream, setStream] = useState<{ state: StreamState; detail?: string }>({ state: "connecting" });
  const [reconnects, setReconnects] = useState(0);
  const tally = useRef<StreamTally>(newTally());
  const [, setTick] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    const ids = { sessionId, executionId };
    const read = async (): Promise<Execution | undefined> => {
      try {
        const e = await ok(api.GET("/api/sessions/{sessionId}/executions/{executionId}", { params: { path: ids }, signal: ctl.signal }));
        if (!ctl.signal.aborted) {
          setX(e);
          setError(undefined);
        }
        return e;
      } catch (err) {
        if (!ctl.signal.aborted) setError(err as Error);
        return undefined;
      }
    };
    const reread = coalesce(async () => void (await read()), minReadGapMs, ctl.signal);
    // The stream's own figures (the event count, the commands) are drawn at
    // most as often as the execution is read, not once per frame.
    const retally = coalesce(async () => setTick((t) => t + 1), minReadGapMs, ctl.signal);
    read();
    let wasLive = false;
    follow(`/api/sessions/${encodeURIComponent(sessionId)}/executions/${encodeURIComponent(executionId)}/events`, {
      onEvents(batch) {
        if (fold(tally.current, batch)) {
          retally();
          reread();
        }
      },
      onState(state, detail) {
        if (state === "live" && wasLive) setReconnects((n) => n + 1);
        if (state === "live") wasLive = true;
        setStream({ state, detail });
        if (state === "live" || state === "ended") reread();
      },
    }, ctl.signal);
    return () => ctl.abort();
  }, [sessionId, executionId]);

  const select = (id: string) => setQuery({ node: id === selected ? undefined : id });

  return (
    <section class="run-view" data-testid="run-view" data-status={x?.status ?? ""}
      data-events={tally.current.events} data-last-seq={tally.current.lastSeq}>
      <RunTabs current="run" sessionId={sessionId} executionId={executionId} />
      <h1>
        Run <code class="small">{executionId}</code> <Status status={x?.status} />
        {x?.draining ? <span class="badge s-paused">draining</span> : null}
      </h1>
      <StreamBadge state={stream.state} detail={stream.detail} reconnects={reconnects} events={tally.current.events} />
      <ProblemView error={error} />
      {!x && !error ? <Loading what="the run" /> : null}
      {x ? <RunBody x={x} selected={selected} onSelect={select} tally={tally.current} /> : null}
    </section>
  );
}

function StreamBadge({ state, detail, reconnects, events }: { state: StreamState; detail?: string; reconnects: number; events: number }) {
  const words: Record<StreamState, string> = {
    connecting: "connecting…",
    live: "live",
    reconnecting: "reconnecting…",
    ended: "ended",
    refused: "refused",
  };
  return (
    <p class="stream muted small" role="status" data-testid="stream" data-state={state} data-reconnects={reconnects}>
      <span class={"dot st-" + state} aria-hidden="true" /> Event stream: <strong>{words[state]}</strong>
      {state === "refused" && detail ? <> — {detail}</> : null}
      {` · ${events} event(s)`}
      {reconnects ? ` · resumed ${reconnects} time(s) with Last-Event-ID` : ""}
    </p>
  );
}

function RunBody({ x, selected, onSelect, tally }: {
  x: Execution; selected?: string; onSelect: (id: string) => void; tally: StreamTally;
}) {
  // The run's own edges (as it started), kept as one array while they read the same.
  const shape = JSON.stringify(x.edges ?? []);
  const edges = useMemo<DagEdge[]>(
    () => (x.edges ?? []).map((e) => ({ from: e.source, to: e.target, port: e.sourcePort === "default" ? undefined : e.sourcePort })),
    [shape],
  );
  const dagNodes: DagNode[] = x.nodes.map((n) => ({ id: n.nodeId, type: n.type, status: n.status, detail: counters(n), flags: flags(n) }));
  const node = x.nodes.find((n) => n.nodeId === selected);
  const commands = useMemo(() => [...tally.commands.values()].reverse().slice(0, 20), [tally.events]);
  return (
    <>
      <dl class="facts">
        <div><dt>Workflow</dt><dd><a href={`/sessions/${encodeURIComponent(x.sessionId)}`}>{x.sessionId}</a> / {x.workflowId}</dd></div>
        <div><dt>Started by</dt><dd data-testid="started-by">{x.actor} <span class="muted">via {x.channel}</span></dd></div>
        <div><dt>Started</dt><dd><Time at={x.startedAt} /></dd></div>
        <div><dt>Ended</dt><dd><Time at={x.endedAt} /></dd></div>
        <div><dt>Duration</dt><dd>{duration(x.startedAt, x.endedAt)}</dd></div>
        {x.restartOf ? (
          <div><dt>Restart of</dt><dd><a href={`/sessions/${encodeURIComponent(x.sessionId)}/executions/${x.restartOf}`} data-testid="restart-of">{x.restartOf}</a>
            {x.fromNodeId ? <> from node <code>{x.fromNodeId}</code></> : null}</dd></div>
        ) : null}
      </dl>
      {x.error ? <div class="problem" role="alert" data-testid="run-error"><strong>Error</strong><p>{x.error}</p></div> : null}
      <div class="run-grid">
        <div class="run-main">
          <Dag nodes={dagNodes} edges={edges} selected={selected} onSelect={onSelect} label={`Nodes of run ${x.executionId}`} />
          <p class="muted small">Select a node to see it and steer it. Counters: received → emitted.</p>
          <NodeTable nodes={x.nodes} selected={selected} onSelect={onSelect} hits={tally.hits} />
        </div>
        <aside class="run-side">
          {node ? <NodePanel key={node.nodeId} x={x} node={node} hit={tally.hits.get(node.nodeId)} transitions={tally.transitions.get(node.nodeId)} /> : (
            <p class="muted panel">No node selected.</p>
          )}
          <RunControls x={x} selected={selected} />
          <Commands commands={commands} sessionId={x.sessionId} />
        </aside>
      </div>
      <section class="panel" aria-labelledby="result-h">
        <h2 id="result-h">Result</h2>
        {x.result !== undefined ? <JsonView value={x.result} label="Result" /> : <p class="muted">{finished(x.status) ? "No RESULT node stored a value." : "Not yet."}</p>}
      </section>
      {x.spend ? <SpendView spend={x.spend} /> : null}
      <Logs sessionId={x.sessionId} executionId={x.executionId} live={!finished(x.status)} />
    </>
  );
}

/** attempts: the plugin's starts, retries included; unknown once retention pruned the run's messages. */
function attempts(n: Node) {
  return n.attempts === undefined ? <span class="muted" title="pruned by retention">unknown</span> : n.attempts;
}

function counters(n: Node): string {
  let s = `${n.received}→${n.emitted}`;
  if (n.waiting) s += ` ·${n.waiting}w`;
  return s;
}

function flags(n: Node): string[] {
  const f: string[] = [];
  if (n.paused) f.push("paused");
  if (n.stepMode) f.push(`step${n.stepCredits ? "+" + n.stepCredits : ""}`);
  if (n.skipped) f.push("skip");
  if (n.breakpoint) f.push("●bp");
  return f;
}

function NodeTable({ nodes, selected, onSelect, hits }: {
  nodes: Node[]; selected?: string; onSelect: (id: string) => void; hits: StreamTally["hits"];
}) {
  return (
    <div class="table-wrap">
      <table class="nodes" aria-label="Nodes">
        <thead>
          <tr><th>Node</th><th>Status</th><th>Received</th><th>Emitted</th><th>Attempts</th><th>Waiting</th><th>Wall</th><th>Flags</th></tr>
        </thead>
        <tbody>
          {nodes.map((n) => (
            <tr key={n.nodeId} data-node-row={n.nodeId} data-status={n.status} data-received={n.received} data-emitted={n.emitted}
              data-attempts={n.attempts ?? ""}
              class={selected === n.nodeId ? "selected" : undefined}>
              <td><button type="button" class="link" aria-pressed={selected === n.nodeId} onClick={() => onSelect(n.nodeId)}>{n.nodeId}</button>
                <span class="muted small"> {n.type}</span></td>
              <td><Status status={n.status} /></td>
              <td>{n.received}</td>
              <td>{n.emitted}</td>
              <td>{attempts(n)}</td>
              <td>{n.waiting ?? 0}{n.dueAt ? <span class="muted small"> due <Time at={n.dueAt} /></span> : null}</td>
              <td>{millis(n.wallMs)}</td>
              <td>{flagWords(n, hits.has(n.nodeId)).join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function flagWords(n: Node, hit: boolean): string[] {
  const f: string[] = [];
  if (n.paused) f.push("paused");
  if (n.stepMode) f.push(`step mode (${n.stepCredits ?? 0} credit${n.stepCredits === 1 ? "" : "s"})`);
  if (n.skipped) f.push("skipped");
  if (n.breakpoint) f.push("breakpoint");
  if (hit) f.push("breakpoint hit");
  return f;
}

function NodePanel({ x, node, hit, transitions }: { x: Execution; node: Node; hit?: { at: string; itemId: number }; transitions?: number }) {
  const bp = node.breakpoint;
  const spend = x.spend?.nodes?.[node.nodeId];
  return (
    <section class="panel node-panel" aria-labelledby="node-h" data-testid="node-panel" data-node={node.nodeId}>
      <h2 id="node-h">Node <code>{node.nodeId}</code> <Status status={node.status} /></h2>
      <dl class="facts compact">
        <div><dt>Type</dt><dd>{node.type}</dd></div>
        <div><dt>Received</dt><dd data-testid="node-received">{node.received}</dd></div>
        <div><dt>Emitted</dt><dd data-testid="node-emitted">{node.emitted}</dd></div>
        <div><dt>Attempts</dt><dd data-testid="node-attempts">{attempts(node)}</dd></div>
        <div><dt>Waiting</dt><dd>{node.waiting ?? 0}</dd></div>
        {node.dueAt ? <div><dt>Due</dt><dd><Time at={node.dueAt} /></dd></div> : null}
        <div><dt>Wall time</dt><dd>{millis(node.wallMs)}</dd></div>
        <div><dt>Status changes</dt><dd title="NodeStatusChanged events seen on the stream">{transitions ?? 0}</dd></div>
        <div><dt>Started</dt><dd><Time at={node.startedAt} /></dd></div>
        <div><dt>Ended</dt><dd><Time at={node.endedAt} /></dd></div>
        <div><dt>Flags</dt><dd data-testid="node-flags">{flagWords(node, !!hit).join(", ") || "none"}</dd></div>
        {bp ? (
          <div><dt>Breakpoint</dt><dd data-testid="node-breakpoint">
            {bp.condition ? <code>{bp.condition}</code> : <><code>{bp.field}</code> = <code>{JSON.stringify(bp.equals)}</code></>}
          </dd></div>
        ) : null}
        {hit ? <div><dt>Hit</dt><dd data-testid="node-hit">before message {hit.itemId} at <Time at={hit.at} /></dd></div> : null}
        {spend ? <div><dt>Spend</dt><dd>{spendWords(spend)}</dd></div> : null}
      </dl>
      {node.error ? <div class="problem" role="alert"><strong>Error</strong><p>{node.error}</p></div> : null}
      <NodeControls x={x} node={node} />
    </section>
  );
}

function Commands({ commands, sessionId }: { commands: CommandSeen[]; sessionId: string }) {
  return (
    <section class="panel" aria-labelledby="commands-h">
      <h2 id="commands-h">Recent commands</h2>
      {commands.length === 0 ? <p class="muted">None on this run yet.</p> : (
        <ol class="commands" data-testid="commands" aria-live="polite" tabIndex={0} aria-label="Recent commands, newest first">
          {commands.map((c) => (
            <li key={c.commandId} data-action={c.action} data-outcome={c.outcome ?? "pending"}>
              <strong>{c.scope === "node" ? `${c.action} ${c.nodeId ?? ""}` : c.scope === "workflow" ? `${c.action} (workflow)` : c.action}</strong>
              {c.mode ? ` ${c.mode}` : ""} by <span class="who">{c.actor}</span> <span class="muted">via {c.channel}</span>{" "}
              <span class={"badge " + (c.outcome === "applied" ? "s-success" : c.outcome === "rejected" ? "s-failure" : "s-pending")}>
                {c.outcome ?? "accepted"}
              </span>
              {c.message ? <div class="small">{c.message}</div> : null}
              {c.reason ? <div class="small muted">reason: {c.reason}</div> : null}
              {c.resultExecutionIds?.length ? (
                <div class="small">
                  {c.resultExecutionIds.map((id) => (
                    <a key={id} href={`/sessions/${encodeURIComponent(sessionId)}/executions/${id}`} data-testid="result-run">{id}</a>
                  ))}
                </div>
              ) : null}
              <div class="small muted"><Time at={c.at} /></div>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

type Spend = NonNullable<Execution["spend"]>;
type NodeSpend = Spend["total"];

function spendWords(s: NodeSpend): string {
  const parts = [`${s.tasks} task(s)`];
  if (s.usage) parts.push(`${s.usage.input} in / ${s.usage.output} out tokens${s.usageKnown ? "" : " (floor)"}`);
  else parts.push("no usage reported");
  if (s.cost) parts.push(`$${s.cost.usd.toFixed(4)}${s.costKnown ? "" : " (floor)"} ${s.cost.provenance}`);
  else parts.push("no cost reported");
  return parts.join(" · ");
}

function SpendView({ spend }: { spend: Spend }) {
  const rows = Object.entries(spend.nodes ?? {});
  if (rows.length === 0 && spend.total.tasks === 0) return null;
  return (
    <section class="panel" aria-labelledby="spend-h" data-testid="spend">
      <h2 id="spend-h">Spend</h2>
      <p class="muted small">What remote workers reported for TASK nodes. Absent is not zero: “floor” means some task
        did not report, so the real figure is at least this.</p>
      <div class="table-wrap">
        <table aria-label="Spend by node">
          <thead><tr><th>Node</th><th>Tasks</th><th>Tokens (in / out)</th><th>Cost</th></tr></thead>
          <tbody>
            {rows.map(([id, s]) => <SpendRow key={id} id={id} s={s} />)}
            <SpendRow id="total" s={spend.total} />
          </tbody>
        </table>
      </div>
      {spend.spendGaps.length ? <p class="small">Usage missing for: {spend.spendGaps.join(", ")}</p> : null}
      {spend.costGaps.length ? <p class="small">Cost missing for: {spend.costGaps.join(", ")}</p> : null}
    </section>
  );
}

function SpendRow({ id, s }: { id: string; s: NodeSpend }) {
  return (
    <tr>
      <td>{id === "total" ? <strong>total</strong> : id}</td>
      <td>{s.tasks} <span class="muted small">({s.usageReports} with usage, {s.costReports} with cost)</span></td>
      <td>{s.usage ? `${s.usage.input} / ${s.usage.output}` : "—"}{s.usage && !s.usageKnown ? " (floor)" : ""}</td>
      <td>{s.cost ? `$${s.cost.usd.toFixed(4)} ${s.cost.provenance}` : "—"}{s.cost && !s.costKnown ? " (floor)" : ""}</td>
    </tr>
  );
}

export const run: Page = {
  path: "/sessions/:sessionId/executions/:executionId",
  title: "Run",
  component: (p) => (can("VIEWER") ? <RunView {...p} /> : <p>Sign in.</p>),
};
