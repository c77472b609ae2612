// A session: each workflow drawn as a DAG (node ids and types, ports on the
// edges), a node's config on click or Enter (secrets arrive masked by the
// server), the workflow's pause and last run, links to the run history,
// and, for an OPERATOR or ADMIN, a payload editor that starts a run and
// opens it.
import { useEffect, useMemo, useState } from "preact/hooks";
import { can } from "../../app/auth";
import { ApiError, api, ok, type Schemas } from "../../app/client";
import { navigate } from "../../app/router";
import { Dag, type DagEdge, type DagNode } from "../../components/dag";
import { JsonView } from "../../components/json";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { PayloadEditor, checkPayload, type Schema } from "../../components/payload";
import { Status, Time } from "../../components/status";
import type { Page, PageProps } from "../page";
import "./page.css";

type WorkflowConfig = Schemas["WorkflowConfig"];
type WorkflowSummary = Schemas["WorkflowSummary"];

async function load(sessionId: string) {
  const path = { path: { sessionId } };
  const [doc, list] = await Promise.all([
    ok(api.GET("/api/sessions/{sessionId}", { params: path })),
    ok(api.GET("/api/sessions/{sessionId}/workflows", { params: path })),
  ]);
  return { doc, summaries: new Map(list.workflows.map((w) => [w.workflowId, w])) };
}

function SessionPage({ params }: PageProps) {
  const sessionId = params.sessionId!;
  const s = useLoad(() => load(sessionId), [sessionId]);
  useEffect(() => {
    if (!s.data) return;
    // When every workflow's nodes are in the page: the browser test reads
    // this mark to time the page from navigation to a drawn DAG.
    performance.mark("yukta:session-drawn", { detail: { nodes: document.querySelectorAll(".session-page [data-node]").length } });
  }, [s.data]);
  const sid = encodeURIComponent(sessionId);
  return (
    <section class="session-page">
      <nav class="tabs" aria-label="Session">
        <a href="/sessions">← Sessions</a>
        <a href={`/sessions/${sid}`} aria-current="page">Workflows</a>
        <a href={`/sessions/${sid}/executions`}>Run history</a>
      </nav>
      <ProblemView error={s.error} />
      {s.loading && !s.data ? <Loading what={`session ${sessionId}`} /> : null}
      {s.data ? (
        <>
          <header class="session-head">
            <h1>
              {s.data.doc.name} <span class="mono muted">{sessionId}</span>
            </h1>
            {s.data.doc.description ? <p>{s.data.doc.description}</p> : null}
            {s.data.doc.tags?.length ? (
              <p class="row small">
                {s.data.doc.tags.map((t) => <span key={t} class="badge">{t}</span>)}
              </p>
            ) : null}
          </header>
          {s.data.doc.workflows.map((w) => (
            <Workflow key={w.workflowId} sessionId={sessionId} w={w} summary={s.data!.summaries.get(w.workflowId)} />
          ))}
        </>
      ) : null}
    </section>
  );
}

function Workflow({ sessionId, w, summary }: { sessionId: string; w: WorkflowConfig; summary?: WorkflowSummary }) {
  const [selected, setSelected] = useState<string>();
  const nodes = useMemo<DagNode[]>(() => w.nodes.map((n) => ({ id: n.nodeId, type: n.type })), [w]);
  const edges = useMemo<DagEdge[]>(
    () => (w.edges ?? []).map((e) => ({ from: e.source, to: e.target, port: e.sourcePort && e.sourcePort !== "default" ? e.sourcePort : undefined })),
    [w],
  );
  const node = selected ? w.nodes.find((n) => n.nodeId === selected) : undefined;
  const sid = encodeURIComponent(sessionId);
  const wid = encodeURIComponent(w.workflowId);
  const last = summary?.lastExecution;
  const headId = `wf-${w.workflowId}`;
  return (
    <section class="workflow" aria-labelledby={headId} data-workflow={w.workflowId}>
      <h2 id={headId}>
        <span class="mono">{w.workflowId}</span> <span class="muted small">{w.nodes.length} nodes</span>
      </h2>
      {w.description ? <p class="muted">{w.description}</p> : null}
      {summary?.pause ? (
        <p class="pause" role="status" data-testid="workflow-pause">
          <span class="badge s-paused">WORKFLOW PAUSED</span> by <strong>{summary.pause.by}</strong> via {summary.pause.via} since{" "}
          <Time at={summary.pause.since} />
          {summary.pause.reason ? <>: “{summary.pause.reason}”</> : null}. New runs are refused until it is resumed.
        </p>
      ) : null}
      <p class="row">
        Last run:{" "}
        {last ? (
          <a href={`/sessions/${sid}/executions/${encodeURIComponent(last.executionId)}`} data-testid="last-run">
            <Status status={last.status} /> <Time at={last.startedAt} />
          </a>
        ) : (
          <span class="muted">never ran</span>
        )}
        <a href={`/sessions/${sid}/executions?workflowId=${wid}`}>Run history of {w.workflowId}</a>
      </p>
      <div class="grid2">
        <Dag nodes={nodes} edges={edges} selected={selected} onSelect={(id) => setSelected(id === selected ? undefined : id)}
          label={`Workflow ${w.workflowId}: ${w.nodes.length} nodes; Tab to a node, Enter shows its config`} />
        <div class="side">
          <div class="panel node-config" aria-live="polite" data-testid="node-config">
            {node ? (
              <>
                <h3>
                  <span class="mono">{node.nodeId}</span> <span class="badge">{node.type}</span>
                </h3>
                {node.name ? <p>{node.name}</p> : null}
                <p class="muted small">Config (secret fields read *** : the server never sends them)</p>
                <JsonView value={node.config ?? {}} label={`Config of node ${node.nodeId}`} />
              </>
            ) : (
              <p class="muted small">Select a node (click, or Tab to it and press Enter) to see its config.</p>
            )}
          </div>
          {can("OPERATOR") ? <StartRun sessionId={sessionId} workflowId={w.workflowId} /> : null}
        </div>
      </div>
    </section>
  );
}

function StartRun({ sessionId, workflowId, schema }: { sessionId: string; workflowId: string; schema?: Schema }) {
  const [text, setText] = useState("{}");
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<string[]>([]);
  const [problem, setProblem] = useState<Error>();
  const [answer, setAnswer] = useState<string>();
  const id = `payload-${workflowId}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setAnswer(undefined);
    const checked = checkPayload(text, schema);
    setErrors(checked.errors);
    if (checked.errors.length) return;
    setBusy(true);
    try {
      const { data, error, response } = await api.POST("/api/sessions/{sessionId}/workflows/{workflowId}/executions", {
        params: { path: { sessionId, workflowId } },
        body: checked.value === undefined ? {} : { payload: checked.value },
      });
      if (error !== undefined || !response.ok) throw new ApiError(response.status, error as Schemas["Problem"]);
      if (response.status === 202) {
        const t = data as Schemas["ReviewTicket"];
        setAnswer(`${t.message} (review ${t.reviewId}, ${t.status}).`);
        return;
      }
      const r = data as Schemas["StartResult"];
      navigate(`/sessions/${encodeURIComponent(sessionId)}/executions/${encodeURIComponent(r.executionId)}`);
    } catch (err) {
      setProblem(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel start" onSubmit={submit} aria-label={`Start a run of ${workflowId}`}>
      <PayloadEditor id={id} label={`Payload of a run of ${workflowId}`} value={text} onChange={setText} schema={schema} />
      <div class="row">
        <button type="submit" class="primary" disabled={busy} data-testid={`start-${workflowId}`}>
          {busy ? "Starting…" : "Start a run"}
        </button>
        <span class="muted small">as OPERATOR or ADMIN; the run opens when it started</span>
      </div>
      <div aria-live="polite" data-testid={`start-${workflowId}-answer`}>
        {errors.length ? (
          <ul class="field-error" role="alert">
            {errors.map((x) => <li key={x}>{x}</li>)}
          </ul>
        ) : null}
        {answer ? <p class="answer">{answer}</p> : null}
        <ProblemView error={problem} />
      </div>
    </form>
  );
}

export const session: Page = { path: "/sessions/:sessionId", title: "Session", component: SessionPage };
