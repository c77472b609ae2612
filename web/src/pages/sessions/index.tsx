// The sessions: every session the key may read, searched by the server
// (id, name or description), each with the last run of every workflow.
// The search and the page are in the location (?q=…&cursor=…), so a
// reload or a shared link shows the same list.
import { useEffect, useState } from "preact/hooks";
import { api, ok, type Schemas } from "../../app/client";
import { setQuery } from "../../app/router";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Status, Time } from "../../components/status";
import type { Page, PageProps } from "../page";
import "./page.css";

const pageSize = 50;

function Sessions({ query }: PageProps) {
  const q = query.get("q") ?? "";
  const cursor = query.get("cursor") ?? undefined;
  const [text, setText] = useState(q);
  // The server searches: a short pause after typing, then one request.
  useEffect(() => {
    if (text === q) return;
    const t = setTimeout(() => setQuery({ q: text.trim() || undefined, cursor: undefined }), 250);
    return () => clearTimeout(t);
  }, [text]);
  const list = useLoad(
    () => ok(api.GET("/api/sessions", { params: { query: { limit: pageSize, q: q || undefined, cursor } } })),
    [q, cursor],
  );
  const sessions = list.data?.sessions;
  return (
    <section class="sessions-page">
      <h1>Sessions</h1>
      <form class="toolbar" role="search" onSubmit={(e) => (e.preventDefault(), setQuery({ q: text.trim() || undefined, cursor: undefined }))}>
        <label for="session-search">Search</label>
        <input id="session-search" type="search" value={text} placeholder="id, name or description" maxLength={200}
          onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <span class="muted small" aria-live="polite" data-testid="session-count">
          {sessions ? `${sessions.length}${list.data?.nextCursor ? "+" : ""} session${sessions.length === 1 ? "" : "s"}${q ? ` matching “${q}”` : ""}` : ""}
        </span>
      </form>
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="sessions" /> : null}
      {sessions ? (
        sessions.length === 0 ? (
          <p class="muted">{q ? `No session's id, name or description contains “${q}”.` : "No sessions yet: apply one with PUT /api/sessions/{sessionId} (README, Quickstart)."}</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr><th scope="col">Session</th><th scope="col">Workflows and their last run</th><th scope="col">Updated</th></tr>
              </thead>
              <tbody>
                {sessions.map((s) => <Row key={s.sessionId} s={s} />)}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <nav class="toolbar" aria-label="Pages">
        {cursor ? <a href={href(q, undefined)}>← First page</a> : null}
        {list.data?.nextCursor ? <a href={href(q, list.data.nextCursor)} data-testid="next-page">Next page →</a> : null}
      </nav>
    </section>
  );
}

function href(q: string, cursor?: string): string {
  const p = new URLSearchParams();
  if (q) p.set("q", q);
  if (cursor) p.set("cursor", cursor);
  const s = p.toString();
  return "/sessions" + (s ? "?" + s : "");
}

function Row({ s }: { s: Schemas["SessionSummary"] }) {
  const sid = encodeURIComponent(s.sessionId);
  return (
    <tr data-session={s.sessionId}>
      <td>
        <a href={`/sessions/${sid}`}><strong>{s.sessionId}</strong></a>
        <div>{s.name}</div>
        {s.description ? <div class="muted small">{s.description}</div> : null}
      </td>
      <td>
        <ul class="wf-runs">
          {s.workflows.map((w) => (
            <li key={w.workflowId} data-workflow={w.workflowId}>
              <span class="mono">{w.workflowId}</span>{" "}
              {w.pause ? <span class="badge s-paused" title={`paused by ${w.pause.by} since ${w.pause.since}`}>WORKFLOW PAUSED</span> : null}{" "}
              {w.lastExecution ? (
                <a href={`/sessions/${sid}/executions/${encodeURIComponent(w.lastExecution.executionId)}`} data-testid="last-run">
                  <span class="vh">last run of {w.workflowId}: </span>
                  <Status status={w.lastExecution.status} /> <Time at={w.lastExecution.startedAt} />
                </a>
              ) : (
                <span class="muted small">never ran</span>
              )}
            </li>
          ))}
        </ul>
      </td>
      <td>
        <Time at={s.updatedAt} />
        <div class="muted small">{s.updatedBy} via {s.updatedVia}</div>
      </td>
    </tr>
  );
}

export const sessions: Page = { path: "/sessions", title: "Sessions", nav: "Sessions", component: Sessions };
