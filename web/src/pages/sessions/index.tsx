// The sessions: every session the key may read, with its workflows.
import { api, ok } from "../../app/client";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Time } from "../../components/status";
import type { Page } from "../page";

function Sessions() {
  const list = useLoad(() => ok(api.GET("/api/sessions", { params: { query: { limit: 500 } } })), []);
  return (
    <section>
      <h1>Sessions</h1>
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="sessions" /> : null}
      {list.data ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr><th>Session</th><th>Name</th><th>Workflows</th><th>Updated</th><th>By</th></tr>
            </thead>
            <tbody>
              {list.data.sessions.map((s) => (
                <tr key={s.sessionId}>
                  <td><a href={`/sessions/${encodeURIComponent(s.sessionId)}`}>{s.sessionId}</a></td>
                  <td>{s.name}</td>
                  <td>{s.workflowCount}</td>
                  <td><Time at={s.updatedAt} /></td>
                  <td>{s.updatedBy} <span class="muted">via {s.updatedVia}</span></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

export const sessions: Page = { path: "/sessions", title: "Sessions", nav: "Sessions", component: Sessions };
