// A run's holds (GET …/holds): which supervisors keep it paused, since when
// and why; an ADMIN ends any of them (DELETE …/holds/{supervisorId}, with a
// reason for the journal), and sees whether the run resumed.
import "./page.css";
import { useState } from "preact/hooks";
import { can } from "../../app/auth";
import { api, ok, type Schemas } from "../../app/client";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Time } from "../../components/status";
import { RunTabs } from "../../components/tabs";
import type { Page, PageProps } from "../page";

type Release = Schemas["HoldRelease"];

function Holds({ params }: PageProps) {
  const sessionId = params.sessionId!;
  const executionId = params.executionId!;
  const list = useLoad(() => ok(api.GET("/api/sessions/{sessionId}/executions/{executionId}/holds", { params: { path: { sessionId, executionId } } })), [sessionId, executionId]);
  const [released, setReleased] = useState<Release>();
  return (
    <section class="holds">
      <RunTabs current="holds" sessionId={sessionId} executionId={executionId} />
      <h1>Holds</h1>
      <p class="muted small">A supervisor's hold keeps the run paused until every holder released it. An ADMIN ends any hold; it is journaled with the ADMIN and the reason.</p>
      <div aria-live="polite">
        {released ? (
          <div class="answer" data-testid="released">
            {released.message} {released.resumed ? <strong>The run resumed{released.commandId ? <> (command <code>{released.commandId}</code>)</> : null}.</strong> : null}
            {released.holds.length ? ` ${released.holds.length} hold(s) remain.` : ""}
          </div>
        ) : null}
      </div>
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="the holds" /> : null}
      {list.data ? (
        list.data.holds.length === 0 ? (
          <p data-testid="no-holds">Nothing holds this run.</p>
        ) : (
          <>
            <p>{list.data.pausedByHold ? "The holds paused this run: releasing the last one resumes it." : "The run is held; the holds did not pause it."}</p>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Holds">
              <table>
                <thead><tr><th>Supervisor</th><th>Since</th><th>Why</th>{can("ADMIN") ? <th>Release</th> : null}</tr></thead>
                <tbody>
                  {list.data.holds.map((h) => (
                    <tr key={h.supervisorId} data-hold={h.supervisorId}>
                      <td><a href={`/supervisors/${encodeURIComponent(h.supervisorId)}`}>{h.supervisorId}</a></td>
                      <td><Time at={h.since} /></td>
                      <td>{h.reason}</td>
                      {can("ADMIN") ? (
                        <td><ReleaseForm sessionId={sessionId} executionId={executionId} supervisorId={h.supervisorId}
                          onReleased={(r) => { setReleased(r); list.reload(); }} /></td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )
      ) : null}
    </section>
  );
}

function ReleaseForm(p: { sessionId: string; executionId: string; supervisorId: string; onReleased: (r: Release) => void }) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Error>();
  const fid = "release-" + p.supervisorId.replace(/[^A-Za-z0-9_-]/g, "_");
  const release = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      p.onReleased(await ok(api.DELETE("/api/sessions/{sessionId}/executions/{executionId}/holds/{supervisorId}", {
        params: { path: { sessionId: p.sessionId, executionId: p.executionId, supervisorId: p.supervisorId }, query: { reason: reason.trim() || undefined } },
      })));
    } catch (err) {
      setProblem(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="row" onSubmit={release} aria-label={`Release ${p.supervisorId}'s hold`}>
      <label for={fid} class="sr-label">Reason</label>
      <input id={fid} value={reason} maxLength={1024} placeholder="why (journaled)" onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <button type="submit" class="danger" disabled={busy} data-testid="release">Release</button>
      <span aria-live="polite"><ProblemView error={problem} /></span>
    </form>
  );
}

export const holds: Page = { path: "/sessions/:sessionId/executions/:executionId/holds", title: "Holds", component: Holds };
