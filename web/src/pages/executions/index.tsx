// A session's run history, newest first: filtered by workflow and status
// and paged by the server, the filters and the page in the location
// (?workflowId=…&status=…&cursor=…) so a reload or a shared link shows the
// same rows. Each row opens the run.
import { api, ok, type Schemas } from "../../app/client";
import { setQuery } from "../../app/router";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Status, Time, duration } from "../../components/status";
import type { Page, PageProps } from "../page";
import "./page.css";

const statuses: Schemas["ExecutionStatus"][] = ["PENDING", "RUNNING", "PAUSED", "SUCCESS", "FAILURE", "STOPPED"];

function History({ params, query }: PageProps) {
  const sessionId = params.sessionId!;
  const workflowId = query.get("workflowId") ?? "";
  const status = (query.get("status") ?? "") as Schemas["ExecutionStatus"] | "";
  const cursor = query.get("cursor") ?? "";
  // A page size in the location (?limit=…); one that is not a whole
  // number is left to the server's default rather than sent.
  const limitText = query.get("limit");
  const limit = limitText && /^\d+$/.test(limitText) ? Number(limitText) : undefined;
  const workflows = useLoad(() => ok(api.GET("/api/sessions/{sessionId}/workflows", { params: { path: { sessionId } } })), [sessionId]);
  const page = useLoad(
    () =>
      ok(
        api.GET("/api/sessions/{sessionId}/executions", {
          params: {
            path: { sessionId },
            query: { workflowId: workflowId || undefined, status: status || undefined, cursor: cursor || undefined, limit },
          },
        }),
      ),
    [sessionId, workflowId, status, cursor, limitText],
  );
  const sid = encodeURIComponent(sessionId);
  const next = (c?: string) => {
    const p = new URLSearchParams();
    if (workflowId) p.set("workflowId", workflowId);
    if (status) p.set("status", status);
    if (limitText) p.set("limit", limitText);
    if (c) p.set("cursor", c);
    const s = p.toString();
    return `/sessions/${sid}/executions${s ? "?" + s : ""}`;
  };
  const rows = page.data?.executions;
  return (
    <section class="history-page">
      <nav class="tabs" aria-label="Session">
        <a href="/sessions">← Sessions</a>
        <a href={`/sessions/${sid}`}>Workflows</a>
        <a href={`/sessions/${sid}/executions`} aria-current="page">Run history</a>
      </nav>
      <h1>
        Run history <span class="mono muted">{sessionId}</span>
      </h1>
      <form class="toolbar" aria-label="Filter the runs" onSubmit={(e) => e.preventDefault()}>
        <label for="filter-workflow">Workflow</label>
        <select id="filter-workflow" value={workflowId} onChange={(e) => setQuery({ workflowId: (e.target as HTMLSelectElement).value, cursor: undefined })}>
          <option value="">every workflow</option>
          {workflows.data?.workflows.map((w) => <option key={w.workflowId} value={w.workflowId}>{w.workflowId}</option>)}
          {workflowId && workflows.data && !workflows.data.workflows.some((w) => w.workflowId === workflowId) ? (
            <option value={workflowId}>{workflowId} (removed)</option>
          ) : null}
        </select>
        <label for="filter-status">Status</label>
        <select id="filter-status" value={status} onChange={(e) => setQuery({ status: (e.target as HTMLSelectElement).value, cursor: undefined })}>
          <option value="">any status</option>
          {statuses.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
        {workflowId || status ? (
          <button type="button" class="link" onClick={() => setQuery({ workflowId: undefined, status: undefined, cursor: undefined })}>
            Clear the filters
          </button>
        ) : null}
      </form>
      <ProblemView error={page.error ?? workflows.error} />
      {page.loading && !page.data ? <Loading what="runs" /> : null}
      <p class="muted small" aria-live="polite" data-testid="history-count">
        {rows ? `${rows.length} run${rows.length === 1 ? "" : "s"} on this page${page.data?.nextCursor ? ", more on the next" : ""}${cursor ? " (not the first page)" : ""}` : ""}
      </p>
      {rows && rows.length === 0 ? <p class="muted">No run matches these filters.</p> : null}
      {rows && rows.length > 0 ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Run</th><th scope="col">Workflow</th><th scope="col">Status</th><th scope="col">Started</th>
                <th scope="col">Duration</th><th scope="col">Started by</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((x) => (
                <tr key={x.executionId} data-execution={x.executionId}>
                  <td>
                    <a class="mono" href={`/sessions/${sid}/executions/${encodeURIComponent(x.executionId)}`} title={x.executionId}>
                      {x.executionId.slice(-12)}
                    </a>
                    {x.restartOf ? <div class="muted small">restart of {x.restartOf.slice(-12)}</div> : null}
                  </td>
                  <td class="mono">{x.workflowId}</td>
                  <td><Status status={x.status} /></td>
                  <td><Time at={x.startedAt} /></td>
                  <td>{x.endedAt ? duration(x.startedAt, x.endedAt) : <span class="muted">{duration(x.startedAt)} so far</span>}</td>
                  <td>
                    {x.actor} <span class="muted small">via {x.channel}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <nav class="toolbar" aria-label="Pages">
        {cursor ? <a href={next()}>← Newest</a> : null}
        {page.data?.nextCursor ? <a href={next(page.data.nextCursor)} data-testid="next-page">Older runs →</a> : null}
      </nav>
    </section>
  );
}

export const executions: Page = { path: "/sessions/:sessionId/executions", title: "Run history", component: History };
