// The approvals queue: commands a supervisor's verdict parked with
// REQUIRE_APPROVAL (GET /api/approvals), what each asks, who sent it and
// for which run, every step of its review; an ADMIN approves (the command
// applies as it was sent) or denies it, with a reason, through
// POST /api/approvals/{approvalId}, and sees the review as it stands after.
import "./page.css";
import { useState } from "preact/hooks";
import { can } from "../../app/auth";
import { api, ok, type Schemas } from "../../app/client";
import { setQuery } from "../../app/router";
import { JsonView } from "../../components/json";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Status, Time } from "../../components/status";
import type { Page, PageProps } from "../page";

type Review = Schemas["Review"];
const statuses = ["AWAITING_APPROVAL", "PENDING", "ALLOWED", "APPLIED", "DENIED", "ALL"];

function Approvals({ query }: PageProps) {
  const status = statuses.includes(query.get("status") ?? "") ? query.get("status")! : "AWAITING_APPROVAL";
  const list = useLoad(() => ok(api.GET("/api/approvals", { params: { query: { status, limit: 200 } } })), [status]);
  return (
    <section class="approvals">
      <h1>Approvals</h1>
      <div class="toolbar">
        <label for="a-status">Status</label>
        <select id="a-status" value={status} onChange={(e) => setQuery({ status: (e.target as HTMLSelectElement).value === "AWAITING_APPROVAL" ? undefined : (e.target as HTMLSelectElement).value })}>
          {statuses.map((s) => (
            <option key={s} value={s}>{s === "AWAITING_APPROVAL" ? "AWAITING_APPROVAL (the queue)" : s}</option>
          ))}
        </select>
        <button type="button" onClick={list.reload}>Refresh</button>
      </div>
      {!can("ADMIN") ? <p class="muted small">An ADMIN decides approvals; your key sees the queue.</p> : null}
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="approvals" /> : null}
      {list.data ? (
        <>
          <p class="muted" aria-live="polite">{list.data.reviews.length === 0 ? "Nothing waits." : `${list.data.reviews.length} review(s), newest first.`}</p>
          <ul class="review-list">
            {list.data.reviews.map((r) => <ReviewCard key={r.reviewId} review={r} />)}
          </ul>
        </>
      ) : null}
    </section>
  );
}

/** what says what a command asks in a few words: StopWorkflow (CANCEL) of execution:…. */
function what(c: Record<string, unknown>): string {
  const extra = ["mode", "action", "nodeId"].map((k) => c[k]).filter((x) => typeof x === "string");
  return `${String(c.type ?? "command")}${extra.length ? " (" + extra.join(", ") + ")" : ""}${c.target ? " of " + String(c.target) : ""}`;
}

function ReviewCard({ review }: { review: Review }) {
  const [r, setR] = useState(review);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Error>();
  const [decided, setDecided] = useState<string>();
  const rid = r.reviewId.replace(/[^A-Za-z0-9]/g, "");
  const decide = async (decision: "APPROVE" | "REJECT") => {
    setBusy(true);
    setProblem(undefined);
    try {
      const after = await ok(api.POST("/api/approvals/{approvalId}", { params: { path: { approvalId: r.reviewId } }, body: { decision, reason: reason.trim() || undefined } }));
      setR(after);
      setDecided(decision === "APPROVE" ? "Approved" : "Denied");
    } catch (e) {
      setProblem(e as Error);
    } finally {
      setBusy(false);
    }
  };
  const run = r.executionId ? `/sessions/${encodeURIComponent(r.sessionId)}/executions/${encodeURIComponent(r.executionId)}` : `/sessions/${encodeURIComponent(r.sessionId)}`;
  return (
    <li class="panel review" data-review={r.reviewId} aria-labelledby={`r-${rid}`}>
      <div class="row">
        <Status status={r.status} />
        <h2 id={`r-${rid}`} class="what">{what(r.command)}</h2>
      </div>
      <dl class="facts">
        <dt>Asked by</dt><dd>{r.actor} <span class="muted">via {r.channel}</span></dd>
        <dt>Run</dt><dd><a href={run}>{r.sessionId}{r.workflowId ? "/" + r.workflowId : ""}{r.executionId ? " · " + r.executionId.slice(0, 8) : ""}</a>{r.nodeId ? <> · node <code>{r.nodeId}</code></> : null}</dd>
        {r.reason ? <><dt>Their reason</dt><dd>{r.reason}</dd></> : null}
        <dt>Reviewers</dt><dd>{r.reviewers.join(", ") || "—"}{r.asking ? <span class="muted"> · asking {r.asking}</span> : null}</dd>
        {r.deadline ? <><dt>Deadline</dt><dd><Time at={r.deadline} /></dd></> : null}
        <dt>Since</dt><dd><Time at={r.createdAt} /></dd>
        <dt>Review</dt><dd><code>{r.reviewId}</code></dd>
      </dl>
      <details>
        <summary>The command as sent</summary>
        <JsonView value={r.command} label="The command" />
      </details>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Steps of the review">
        <table class="steps">
          <caption class="muted small">Every step of the review</caption>
          <thead><tr><th>When</th><th>By</th><th>Move</th><th>Reason</th><th>Status</th></tr></thead>
          <tbody>
            {r.steps.map((s, i) => (
              <tr key={i} data-move={s.move}>
                <td><Time at={s.at} /></td><td>{s.by}</td><td>{s.move}</td><td>{s.reason ?? ""}</td><td><Status status={s.status} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {r.outcome ? (
        <div class="answer" data-testid="outcome">
          Outcome: <JsonView value={r.outcome} label="What applying the command gave" />
        </div>
      ) : null}
      {r.status === "AWAITING_APPROVAL" && can("ADMIN") ? (
        <div class="decide">
          <label for={`reason-${rid}`}>Reason (recorded with your decision)</label>
          <input id={`reason-${rid}`} value={reason} maxLength={1024} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          <div class="toolbar">
            <button type="button" class="primary" disabled={busy} data-testid="approve" onClick={() => decide("APPROVE")}>Approve</button>
            <button type="button" class="danger" disabled={busy} data-testid="deny" onClick={() => decide("REJECT")}>Deny</button>
          </div>
        </div>
      ) : null}
      <div aria-live="polite">
        {decided ? <p class="answer" data-testid="decided">{decided}: the review is now {r.status}.</p> : null}
        <ProblemView error={problem} />
      </div>
    </li>
  );
}

export const approvals: Page = { path: "/approvals", title: "Approvals", nav: "Approvals", component: Approvals };
