// The dry run of a rule document against a recorded run
// (POST /api/supervisor-engines/rules/dry-run, an ADMIN): nothing is sent;
// the report lists, in event order, what each rule made of each event and
// the directives it would have sent.
import { useState } from "preact/hooks";
import { can } from "../../app/auth";
import { api, ok, type Schemas } from "../../app/client";
import { JsonEditor, JsonView, parseJson } from "../../components/json";
import { ProblemView, useLoad } from "../../components/load";
import { Status, Time } from "../../components/status";

type Report = Schemas["DryRunReport"];

export function DryRun({ document, sessionHint }: { document: unknown; sessionHint?: string }) {
  const [text, setText] = useState(JSON.stringify(document, null, 2));
  const [sessionId, setSessionId] = useState(sessionHint ?? "");
  const [executionId, setExecutionId] = useState("");
  const [busy, setBusy] = useState(false);
  const [report, setReport] = useState<Report>();
  const [problem, setProblem] = useState<Error>();
  const [local, setLocal] = useState<string>();
  const sessions = useLoad(() => ok(api.GET("/api/sessions", { params: { query: { limit: 500 } } })), []);
  const runs = useLoad(
    () => (sessionId ? ok(api.GET("/api/sessions/{sessionId}/executions", { params: { path: { sessionId }, query: { limit: 50 } } })) : Promise.resolve(undefined)),
    [sessionId],
  );
  if (!can("ADMIN")) return <p class="muted small">An ADMIN tries rule documents against recorded runs here (the dry run).</p>;
  const send = async (e: Event) => {
    e.preventDefault();
    setLocal(undefined);
    setProblem(undefined);
    const doc = parseJson(text);
    if (doc.error || typeof doc.value !== "object" || doc.value === null || Array.isArray(doc.value)) {
      setLocal(doc.error ? "The rule document is not JSON: " + doc.error : "The rule document must be a JSON object ({\"schemaVersion\": 1, \"rules\": […]}).");
      return;
    }
    if (!sessionId || !executionId) {
      setLocal("Choose the session and the run to replay.");
      return;
    }
    setBusy(true);
    try {
      setReport(await ok(api.POST("/api/supervisor-engines/rules/dry-run", { body: { ruleDocument: doc.value as Record<string, unknown>, sessionId, executionId } })));
    } catch (err) {
      setReport(undefined);
      setProblem(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="dryrun panel" aria-label="Dry run" onSubmit={send}>
      <JsonEditor id="dry-doc" label="Rule document (the rules engine's settings)" value={text} onChange={setText} rows={10}
        hint="Edit freely: nothing is stored and nothing is sent to any run." />
      <div class="toolbar">
        <label for="dry-session">Session</label>
        <select id="dry-session" value={sessionId} onChange={(e) => { setSessionId((e.target as HTMLSelectElement).value); setExecutionId(""); }}>
          <option value="">— choose —</option>
          {sessions.data?.sessions.map((s) => <option key={s.sessionId} value={s.sessionId} selected={s.sessionId === sessionId}>{s.sessionId}</option>)}
        </select>
        <label for="dry-run">Recorded run</label>
        <select id="dry-run" value={executionId} onChange={(e) => setExecutionId((e.target as HTMLSelectElement).value)}>
          <option value="">— choose —</option>
          {runs.data?.executions.map((x) => (
            <option key={x.executionId} value={x.executionId} selected={x.executionId === executionId}>{x.workflowId} · {x.status} · {x.executionId.slice(0, 8)} · {new Date(x.startedAt).toLocaleString()}</option>
          ))}
        </select>
        <button type="submit" class="primary" disabled={busy} data-testid="dry-run">Dry run</button>
      </div>
      <ProblemView error={sessions.error ?? runs.error} />
      <div aria-live="polite">
        {local ? <p class="field-error" role="alert">{local}</p> : null}
        <ProblemView error={problem} />
        {report ? <ReportView report={report} /> : null}
      </div>
    </form>
  );
}

function ReportView({ report }: { report: Report }) {
  const fired = report.fired as { seq: number; at: string; eventType: string; nodeId?: string; ruleId: string; directive: unknown }[];
  const evals = report.evaluations as { seq: number; at: string; eventType: string; nodeId?: string; ruleId: string; outcome: string; count?: number; of?: number; error?: string }[];
  const skipped = (report.notReplayed ?? []) as { ruleId: string; reason: string }[];
  return (
    <div class="report" data-testid="dry-run-report">
      <p class="answer">
        Replayed <strong>{report.events}</strong> event(s) of run <code>{report.executionId}</code>: <strong data-testid="fired-count">{fired.length}</strong> directive(s) would have been sent
        {report.truncated ? " (the report is truncated)" : ""}.
      </p>
      {fired.length ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Would have sent">
          <table>
            <caption class="muted small">Would have sent</caption>
            <thead><tr><th>Seq</th><th>When</th><th>Event</th><th>Rule</th><th>Directive</th></tr></thead>
            <tbody>
              {fired.map((f, i) => (
                <tr key={i}><td>{f.seq}</td><td><Time at={f.at} /></td><td>{f.eventType}{f.nodeId ? " · " + f.nodeId : ""}</td><td>{f.ruleId}</td><td><JsonView value={f.directive} label={`Directive of ${f.ruleId}`} /></td></tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {evals.length ? (
        <details>
          <summary>Every evaluation ({evals.length})</summary>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Every evaluation">
            <table>
              <thead><tr><th>Seq</th><th>Event</th><th>Rule</th><th>Outcome</th><th>Count</th><th>Error</th></tr></thead>
              <tbody>
                {evals.map((v, i) => (
                  <tr key={i}><td>{v.seq}</td><td>{v.eventType}{v.nodeId ? " · " + v.nodeId : ""}</td><td>{v.ruleId}</td><td><Status status={v.outcome} /></td><td>{v.of ? `${v.count ?? 0}/${v.of}` : ""}</td><td>{v.error ?? ""}</td></tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ) : null}
      {skipped.length ? (
        <ul class="small">
          {skipped.map((s) => <li key={s.ruleId}><code>{s.ruleId}</code> not replayed: {s.reason}</li>)}
        </ul>
      ) : null}
    </div>
  );
}
