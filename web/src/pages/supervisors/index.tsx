// The supervisors (GET /api/supervisors) and one supervisor
// (GET /api/supervisors/{supervisorId}): its engine and settings (secrets
// read ***), what it owns, whether it is enabled, the commands it may send
// and reviews, its credential's metadata (never a token), the directives
// its intake refused (an ADMIN's read) and a dry run of a rule document
// against a recorded run.
import "./page.css";
import { can } from "../../app/auth";
import { ApiError, api, ok, type Schemas } from "../../app/client";
import { JsonView } from "../../components/json";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Time } from "../../components/status";
import type { Page, PageProps } from "../page";
import { DryRun } from "./dryrun";

const example = {
  schemaVersion: 1,
  rules: [{ id: "pause-on-failure", when: { event: "NodeStatusChanged", status: "FAILURE" }, then: { command: "PauseWorkflow", reason: "a node failed" } }],
};

function State({ enabled }: { enabled: boolean }) {
  return <span class={"badge " + (enabled ? "s-running" : "s-paused")}>{enabled ? "enabled" : "disabled"}</span>;
}

function Supervisors() {
  const list = useLoad(() => ok(api.GET("/api/supervisors")), []);
  const presets = useLoad(() => ok(api.GET("/api/supervisor-engines/{type}/presets", { params: { path: { type: "rules" } } })), []);
  return (
    <section class="supervisors">
      <h1>Supervisors</h1>
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="supervisors" /> : null}
      {list.data ? (
        list.data.supervisors.length === 0 ? (
          <p class="muted">No supervisor is configured (docs/supervisors.md).</p>
        ) : (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Supervisors">
            <table>
              <thead><tr><th>Supervisor</th><th>Name</th><th>Engine</th><th>Owns</th><th>Parent</th><th>State</th><th>Updated</th></tr></thead>
              <tbody>
                {list.data.supervisors.map((s) => (
                  <tr key={s.id} data-supervisor={s.id}>
                    <td><a href={`/supervisors/${encodeURIComponent(s.id)}`}>{s.id}</a></td>
                    <td>{s.name}</td>
                    <td>{s.engine}</td>
                    <td>{s.owns.length ? s.owns.join(", ") : <span class="muted">nothing</span>}</td>
                    <td>{s.parentId ? <a href={`/supervisors/${encodeURIComponent(s.parentId)}`}>{s.parentId}</a> : <span class="muted">root</span>}</td>
                    <td><State enabled={s.enabled} /></td>
                    <td><Time at={s.updatedAt} /> <span class="muted small">by {s.updatedBy} via {s.updatedVia}</span></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      {can("ADMIN") ? (
        <section>
          <h2>Try a rule document</h2>
          <p class="muted small">Replay a recorded run through rules before any supervisor runs them. Start from a preset's document or the example.</p>
          {presets.data ? (
            <DryRun key="dry" document={presets.data.presets[0]?.settings ?? example} />
          ) : (
            <Loading what="presets" />
          )}
        </section>
      ) : null}
    </section>
  );
}

function SupervisorView({ params }: PageProps) {
  const id = params.supervisorId!;
  const sup = useLoad(() => ok(api.GET("/api/supervisors/{supervisorId}", { params: { path: { supervisorId: id } } })), [id]);
  const cred = useLoad(
    () =>
      ok(api.GET("/api/supervisors/{supervisorId}/credential", { params: { path: { supervisorId: id } } })).catch((e: Error) => {
        if (e instanceof ApiError && e.status === 404) return null; // no credential (or no supervisor: said above)
        throw e;
      }),
    [id],
  );
  const refusals = useLoad(
    () => (can("ADMIN") ? ok(api.GET("/api/supervisors/{supervisorId}/refusals", { params: { path: { supervisorId: id }, query: { limit: 50 } } })) : Promise.resolve(undefined)),
    [id],
  );
  const status = useLoad(
    () => (can("ADMIN") ? ok(api.GET("/api/supervisors/{supervisorId}/status", { params: { path: { supervisorId: id } } })) : Promise.resolve(undefined)),
    [id],
  );
  const s = sup.data;
  return (
    <section class="supervisors supervisor">
      <nav class="tabs" aria-label="Supervisor"><a href="/supervisors">← Supervisors</a></nav>
      <h1>Supervisor {id}</h1>
      <ProblemView error={sup.error} />
      {sup.loading && !s ? <Loading what="the supervisor" /> : null}
      {s ? (
        <>
          <dl class="facts" data-testid="supervisor-facts">
            <dt>Name</dt><dd>{s.name}</dd>
            <dt>Engine</dt><dd data-testid="engine">{s.engine.type}</dd>
            <dt>State</dt><dd data-testid="state"><State enabled={s.enabled} /></dd>
            <dt>Owns</dt><dd>{s.owns.length ? s.owns.map((o) => <code key={o} class="unit">{o}</code>) : <span class="muted">nothing</span>}</dd>
            <dt>Parent</dt><dd>{s.parentId ? <a href={`/supervisors/${encodeURIComponent(s.parentId)}`}>{s.parentId}</a> : <span class="muted">root</span>}</dd>
            <dt>May send</dt><dd>{s.allowedCommands.length ? s.allowedCommands.join(", ") : <span class="muted">no command</span>}</dd>
            <dt>Reviews</dt><dd>{s.reviews.length ? s.reviews.join(", ") : <span class="muted">nothing</span>}</dd>
            <dt>Ticks</dt><dd>{s.tickSeconds ? `every ${s.tickSeconds} s` : <span class="muted">none</span>}</dd>
          </dl>
          {s.warnings?.length ? (
            <ul class="warnings" aria-label="Warnings">
              {s.warnings.map((w, i) => <li key={i}>{w}</li>)}
            </ul>
          ) : null}
          <details>
            <summary>Engine settings (secrets read ***)</summary>
            <JsonView value={s.engine.settings} label="Engine settings" />
          </details>
        </>
      ) : null}

      <h2>At work</h2>
      {!can("ADMIN") ? <p class="muted small">An ADMIN reads the runtime status (lease, cursor lag, last directives).</p> : null}
      <ProblemView error={status.error} />
      {status.data ? <Runtime status={status.data} reload={status.reload} /> : null}

      <h2>Credential</h2>
      <ProblemView error={cred.error} />
      {cred.data === null ? <p class="muted" data-testid="credential">No agent API credential (an ADMIN issues one: POST /api/supervisors/{id}/credential).</p> : null}
      {cred.data ? (
        <dl class="facts" data-testid="credential">
          <dt>Hint</dt><dd><code>{cred.data.hint}</code></dd>
          <dt>Issued</dt><dd><Time at={cred.data.createdAt} /> by {cred.data.createdBy} via {cred.data.createdVia}</dd>
          <dt>Expires</dt><dd><Time at={cred.data.expiresAt} /></dd>
          <dt>From</dt><dd>{cred.data.allowedAddresses.length ? cred.data.allowedAddresses.join(", ") : "any address"}</dd>
          <dt>Last used</dt><dd>{cred.data.lastUsedAt ? <Time at={cred.data.lastUsedAt} /> : "never"}</dd>
        </dl>
      ) : null}

      <h2>Refused directives</h2>
      {!can("ADMIN") ? <p class="muted small">An ADMIN reads the refusals.</p> : null}
      <ProblemView error={refusals.error} />
      {refusals.data ? (
        refusals.data.refusals.length === 0 ? (
          <p class="muted" data-testid="refusals">No directive was refused.</p>
        ) : (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Refused directives" data-testid="refusals">
            <table>
              <thead><tr><th>When</th><th>Key</th><th>Door</th><th>Command</th><th>Refusal</th><th>Why</th></tr></thead>
              <tbody>
                {refusals.data.refusals.map((r) => (
                  <tr key={r.key + r.at}>
                    <td><Time at={r.at} /></td>
                    <td><code>{r.key}</code></td>
                    <td>{r.channel}</td>
                    <td>{String(r.directive.command.type ?? "")} {r.directive.command.target ? <code>{String(r.directive.command.target)}</code> : null}</td>
                    <td><span class="badge s-denied">{r.refusal}</span></td>
                    <td>{r.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {refusals.data.nextCursor ? <p class="muted small">Older refusals follow (GET …/refusals?cursor=…).</p> : null}
          </div>
        )
      ) : null}

      {s && can("ADMIN") ? (
        <>
          <h2>Dry run</h2>
          <p class="muted small">
            {s.engine.type === "rules" ? "This supervisor's rules, replayed against a recorded run." : "This supervisor is not a rules engine; try a rule document here."}
          </p>
          <DryRun document={s.engine.type === "rules" ? s.engine.settings : example}
            sessionHint={s.owns.find((o) => o.startsWith("session:"))?.slice("session:".length)} />
        </>
      ) : null}
    </section>
  );
}

function Runtime({ status: st, reload }: { status: Schemas["SupervisorStatus"]; reload: () => void }) {
  const lease = st.lease;
  const cursor = st.cursor;
  return (
    <>
      <dl class="facts" data-testid="runtime">
        <dt>Now</dt>
        <dd><span class={"badge " + (st.state === "running" ? "s-running" : st.state === "disabled" ? "s-paused" : "s-idle")} data-testid="runtime-state">{st.state}</span>
          {" "}<button type="button" class="link" onClick={reload}>Refresh</button></dd>
        <dt>Lease</dt>
        <dd>{lease ? <>{lease.owner} · {lease.live ? "until" : "expired"} <Time at={lease.expiresAt} /></> : <span class="muted">no instance ever took it</span>}</dd>
        <dt>Cursor lag</dt>
        <dd data-testid="cursor-lag">{cursor ? <>{cursor.lagEvents}{cursor.lagCapped ? "+" : ""} event(s) behind · moved <Time at={cursor.updatedAt} /></> : <span class="muted">no server-side cursor (an agent keeps its own)</span>}</dd>
      </dl>
      {st.lastDirectives.length === 0 ? (
        <p class="muted" data-testid="last-directives">No directive yet.</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Last directives" data-testid="last-directives">
          <table>
            <caption class="muted small">Last directives, newest first</caption>
            <thead><tr><th>When</th><th>Key</th><th>Door</th><th>Command</th><th>Status</th><th>Answer</th></tr></thead>
            <tbody>
              {st.lastDirectives.map((d) => (
                <tr key={d.key}>
                  <td><Time at={d.at} /></td>
                  <td><code>{d.key}</code></td>
                  <td>{d.channel}</td>
                  <td>{String(d.directive.command.type ?? "")} {d.directive.command.target ? <code>{String(d.directive.command.target)}</code> : null}</td>
                  <td><span class={"badge " + (d.status === "accepted" ? "s-success" : d.status === "rejected" ? "s-denied" : "s-pending")}>{d.status}</span></td>
                  <td>{d.message ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

export const supervisors: Page = { path: "/supervisors", title: "Supervisors", nav: "Supervisors", component: Supervisors };
export const supervisor: Page = { path: "/supervisors/:supervisorId", title: "Supervisor", component: SupervisorView };
