// Workers and queues: per worker queue its depth (waiting, leased), the age
// of its oldest waiting task and the workers that polled it, and the
// scheduler's run slots and waiting runs, all from GET /api/scheduler. The
// page refreshes itself every few seconds while it is open (the interval
// stops when the page goes) and on a click. The server answers a
// session-limited key 403 (the scheduler counts every session's work):
// the page shows its words.
import "./page.css";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, ok, type Schemas } from "../../app/client";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Time, millis } from "../../components/status";
import type { Page } from "../page";

/** every is how often the page asks again while automatic refresh is on. */
const every = 5000;

type Status = Schemas["SchedulerStatus"];

function Age({ since, now }: { since?: string; now: number }) {
  if (!since) return <span class="muted">—</span>;
  return (
    <span title={new Date(since).toISOString()}>
      {millis(now - Date.parse(since))} <span class="muted small">since <Time at={since} /></span>
    </span>
  );
}

function Workers() {
  const status = useLoad(() => ok(api.GET("/api/scheduler")), []);
  const [auto, setAuto] = useState(true);
  const [at, setAt] = useState<number>(Date.now());
  // A refusal (401, 403) will not change by asking again.
  const refused = status.error instanceof ApiError && (status.error.status === 401 || status.error.status === 403);
  useEffect(() => {
    if (!auto || refused) return;
    const id = window.setInterval(() => status.reload(), every);
    return () => window.clearInterval(id);
  }, [auto, refused, status.reload]);
  useEffect(() => {
    if (!status.loading) setAt(Date.now());
  }, [status.loading, status.data, status.error]);
  const s = status.data;
  return (
    <section class="workers-page">
      <h1>Workers and queues</h1>
      <div class="toolbar">
        <button type="button" onClick={() => status.reload()} disabled={status.loading} data-testid="refresh">
          Refresh
        </button>
        <label class="inline">
          <input type="checkbox" checked={auto} onChange={(e) => setAuto((e.target as HTMLInputElement).checked)} /> Refresh every{" "}
          {every / 1000} s
        </label>
        <span class="muted small" data-testid="refreshed">
          {status.loading ? "asking the server…" : `as of ${new Date(at).toLocaleTimeString()}`}
        </span>
      </div>
      <div aria-live="polite">
        <ProblemView error={status.error} />
      </div>
      {!s && status.loading ? <Loading what="the scheduler" /> : null}
      {s ? <Queues s={s} now={at} /> : null}
      {s ? <Slots s={s} now={at} /> : null}
    </section>
  );
}

function Queues({ s, now }: { s: Status; now: number }) {
  return (
    <section aria-labelledby="queues-h">
      <h2 id="queues-h">Worker queues</h2>
      {s.queues.length === 0 ? (
        <p class="muted">
          No worker queue has live tasks or was polled. A TASK node puts its tasks on a queue; a worker takes them through
          the worker API (docs/workers.md).
        </p>
      ) : (
        <div class="table-wrap">
          <table data-testid="queues">
            <thead>
              <tr><th>Queue</th><th>Waiting</th><th>Leased</th><th>Oldest waiting task</th><th>Workers seen</th></tr>
            </thead>
            <tbody>
              {s.queues.map((q) => (
                <tr key={q.queue} data-queue={q.queue}>
                  <td><code>{q.queue}</code></td>
                  <td class="num" data-testid="waiting">{q.waiting}</td>
                  <td class="num" data-testid="leased">{q.leased}</td>
                  <td><Age since={q.oldestWaitingSince} now={now} /></td>
                  <td>
                    {q.workers.length === 0 ? (
                      <span class="muted">none has polled</span>
                    ) : (
                      <ul class="seen">
                        {q.workers.map((w) => (
                          <li key={w.worker} data-worker={w.worker}>
                            <code>{w.worker}</code> <span class="muted small">last seen {millis(now - Date.parse(w.lastSeen))} ago</span>
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Slots({ s, now }: { s: Status; now: number }) {
  return (
    <section aria-labelledby="slots-h">
      <h2 id="slots-h">Run slots</h2>
      <dl class="facts" data-testid="slots">
        <dt>Limit (--max-running)</dt>
        <dd>{s.maxRunning || "none"}{s.reservedSupervisorSlots ? ` + ${s.reservedSupervisorSlots} reserved for supervisors` : ""}</dd>
        <dt>Runs holding a slot</dt>
        <dd>{s.running.total} <span class="muted small">({s.running.normal} normal, {s.running.reserved} reserved)</span></dd>
        <dt>Runs waiting for one</dt>
        <dd>{s.waiting.total} <span class="muted small">({s.waiting.normal} normal, {s.waiting.reserved} reserved)</span></dd>
        <dt>Oldest waiting run</dt>
        <dd><Age since={s.oldestWaitingSince} now={now} /></dd>
      </dl>
      {s.scopes.length ? (
        <div class="table-wrap">
          <table>
            <caption class="muted small">Sessions and workflows with a limit or waiting runs{s.truncated ? " (the first 500)" : ""}</caption>
            <thead>
              <tr><th>Session</th><th>Workflow</th><th>Limit</th><th>Running</th><th>Waiting</th></tr>
            </thead>
            <tbody>
              {s.scopes.map((c) => (
                <tr key={c.sessionId + "/" + (c.workflowId ?? "")}>
                  <td><a href={`/sessions/${encodeURIComponent(c.sessionId)}`}>{c.sessionId}</a></td>
                  <td>{c.workflowId ?? <span class="muted">the session</span>}</td>
                  <td class="num">{c.maxRunning || "none"}</td>
                  <td class="num">{c.running}</td>
                  <td class="num">{c.waiting}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

export const workers: Page = { path: "/workers", title: "Workers and queues", nav: "Workers", component: Workers };
