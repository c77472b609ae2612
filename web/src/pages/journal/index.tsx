// The journal tab of a run: its observer journal, record by record, and a
// verification badge computed HERE, in the browser, from the export (GET
// …/journal) and the public keys (GET /api/journal/public-key) with
// WebCrypto, not by asking the server whether it trusts itself. The
// server's own answer (GET …/journal/verify) is shown beside it, labelled
// as the server's, and the export can be downloaded byte for byte to check
// offline with `yukta journal verify` (docs/console.md, "Journal").
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, ok, type Schemas } from "../../app/client";
import { Loading, ProblemView } from "../../components/load";
import { millis } from "../../components/status";
import { RunTabs } from "../../components/tabs";
import type { Page, PageProps } from "../page";
import { type Line, type Outcome, verifyExport, writeExact } from "./verify";
import "./page.css";

const perPage = 100;

interface Loaded {
  bytes: Uint8Array<ArrayBuffer>;
  fileSha256: string;
  keysAnswer: Schemas["JournalPublicKey"];
  server?: Schemas["JournalVerification"];
  serverError?: Error;
  lines: Line[];
  outcome: Outcome;
  /** which verification of this page this is (1, 2, … with each "Verify again") */
  run: number;
  warnings: string[];
  ms: number;
}

async function load(sessionId: string, executionId: string, run: number): Promise<Loaded> {
  const params = { path: { sessionId, executionId } };
  const [exported, keysAnswer] = await Promise.all([
    ok(api.GET("/api/sessions/{sessionId}/executions/{executionId}/journal", { params, parseAs: "arrayBuffer" })),
    ok(api.GET("/api/journal/public-key")),
  ]);
  const bytes = new Uint8Array(exported as unknown as ArrayBuffer);
  const text = new TextDecoder().decode(bytes);
  const v = await verifyExport(text, keysAnswer);
  let fileSha256 = "";
  if (typeof crypto !== "undefined" && crypto.subtle) {
    fileSha256 = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  // The server's answer, fetched after the browser's so it cannot be mistaken for it.
  let server: Schemas["JournalVerification"] | undefined;
  let serverError: Error | undefined;
  try {
    server = await ok(api.GET("/api/sessions/{sessionId}/executions/{executionId}/journal/verify", { params }));
  } catch (e) {
    serverError = e as Error;
  }
  return { bytes, fileSha256, keysAnswer, server, serverError, lines: v.lines, outcome: v.outcome, warnings: v.warnings, ms: v.ms, run };
}

function Journal({ params, query }: PageProps) {
  const { sessionId = "", executionId = "" } = params;
  const [tick, setTick] = useState(0);
  const [state, setState] = useState<{ data?: Loaded; error?: Error; loading: boolean }>({ loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load(sessionId, executionId, tick + 1).then(
      (data) => live && setState({ data, loading: false }),
      (error: Error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [sessionId, executionId, tick]);
  const d = state.data;
  const [open, setOpen] = useState<number | undefined>(() => Number(query.get("seq")) || undefined);
  const [page, setPage] = useState(0);
  const reveal = (seq: number): boolean => {
    if (!d) return false;
    const i = d.lines.findIndex((l) => seqOf(l) === seq);
    if (i < 0) return false;
    setPage(Math.floor(i / perPage));
    setOpen(seq);
    requestAnimationFrame(() => document.getElementById(`rec-${seq}`)?.focus());
    return true;
  };
  useEffect(() => {
    const s = Number(query.get("seq"));
    if (d && s) reveal(s);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [d]);

  return (
    <section class="journal">
      <RunTabs current="journal" sessionId={sessionId} executionId={executionId} />
      <h1>
        Journal <span class="muted mono small">{executionId}</span>
      </h1>
      <div class="toolbar">
        <button type="button" onClick={() => setTick((t) => t + 1)} disabled={state.loading}>
          Verify again
        </button>
        {d ? <Download d={d} executionId={executionId} /> : null}
      </div>
      <ProblemView error={state.error} />
      {state.loading && !d ? <Loading what="the journal" /> : null}
      {d ? (
        <>
          <div class="verdicts">
            <BrowserVerdict d={d} reveal={reveal} busy={state.loading} />
            <ServerVerdict d={d} />
          </div>
          <Offline d={d} executionId={executionId} />
          <Records lines={d.lines} page={page} setPage={setPage} open={open} setOpen={setOpen} reveal={reveal}
            bad={d.outcome.result === "INVALID" ? d.outcome.firstBadSequence : undefined} />
        </>
      ) : null}
    </section>
  );
}

const explain: Record<string, string> = {
  VALID: "Every record chains to the one before it, and the last one is vouched for by a checkpoint whose Ed25519 signature verifies under a key the server lists.",
  UNANCHORED: "The records chain, but no valid signed checkpoint vouches for the end, so a cut tail or a recomputed chain would not show.",
  INVALID: "The journal was altered: a record does not hash to its digest, a link or sequence is broken, or a signed checkpoint contradicts it.",
};

function BrowserVerdict({ d, reveal, busy }: { d: Loaded; reveal: (seq: number) => boolean; busy: boolean }) {
  const o = d.outcome;
  const records = d.lines.filter((l) => seqOf(l) !== undefined).length;
  return (
    <div class="panel verdict" aria-live="polite" aria-busy={busy}>
      <h2>Verified in this browser</h2>
      <p class="result" data-testid="browser-result" data-result={o.result}
        data-first-bad={o.result === "INVALID" ? o.firstBadSequence ?? "" : ""} data-ms={d.ms.toFixed(1)} data-records={records} data-run={d.run}>
        <span class={"badge big s-" + o.result.toLowerCase()}>{o.result}</span>
        {o.result === "INVALID" && o.firstBadSequence ? (
          <>
            {" "}at sequence{" "}
            <button type="button" class="link" onClick={() => reveal(o.firstBadSequence!)}>
              {o.firstBadSequence}
            </button>
          </>
        ) : null}
        {o.result !== "UNAVAILABLE" && o.reason ? <code class="reason">{o.reason}</code> : null}
      </p>
      {o.result === "UNAVAILABLE" ? (
        <p class="problem" role="alert">
          <strong>This browser cannot verify the journal.</strong> {o.detail}
          {o.chain ? ` The hash chain alone holds up to sequence ${o.chain.sequence}.` : ""}
        </p>
      ) : (
        <>
          <p>{explain[o.result]}</p>
          {o.detail ? <p class="detail">{o.detail}</p> : null}
          <dl class="facts">
            <dt>Records</dt>
            <dd>{records}</dd>
            <dt>Chain tip</dt>
            <dd class="mono">{o.chainTip ? `${o.sequence} · ${o.chainTip}` : "—"}</dd>
            {o.result === "VALID" ? (
              <>
                <dt>Signed by key</dt>
                <dd class="mono">{o.keyId}</dd>
              </>
            ) : null}
            <dt>Took</dt>
            <dd>{millis(d.ms)} (SHA-256 and Ed25519 by WebCrypto, RFC 8785 JSON by canonicalize)</dd>
          </dl>
        </>
      )}
      {d.warnings.map((w) => (
        <p key={w} class="warn">{w}</p>
      ))}
    </div>
  );
}

function ServerVerdict({ d }: { d: Loaded }) {
  const s = d.server;
  const b = d.outcome;
  const agree = s && b.result !== "UNAVAILABLE" && s.result === b.result && (s.firstBadSequence ?? 0) === (b.result === "INVALID" ? b.firstBadSequence ?? 0 : 0);
  return (
    <div class="panel verdict server" aria-live="polite">
      <h2>The server's own answer</h2>
      <p class="muted small">
        For comparison only: <code>GET …/journal/verify</code>, computed by the server from its database. The badge on the left does not use it.
      </p>
      <ProblemView error={d.serverError} />
      {s ? (
        <>
          <p class="result" data-testid="server-result" data-result={s.result} data-first-bad={s.firstBadSequence ?? ""}>
            <span class={"badge s-" + s.result.toLowerCase()}>{s.result}</span>
            {s.firstBadSequence ? ` at sequence ${s.firstBadSequence}` : null}
            {s.reason ? <code class="reason">{s.reason}</code> : null}
          </p>
          {s.detail ? <p class="detail">{s.detail}</p> : null}
          <p class="small">
            {s.lagEvents > 0 ? `${s.lagEvents} event(s) not journaled yet. ` : null}
            {b.result === "UNAVAILABLE" ? null : agree ? (
              <span data-testid="agreement">The browser and the server agree.</span>
            ) : (
              <strong data-testid="agreement">The browser and the server disagree: trust the one you can check, and verify the download offline.</strong>
            )}
          </p>
        </>
      ) : null}
    </div>
  );
}

function Download({ d, executionId }: { d: Loaded; executionId: string }) {
  const urls = useMemo(() => {
    const journal = URL.createObjectURL(new Blob([d.bytes], { type: "application/x-ndjson" }));
    const keys = URL.createObjectURL(new Blob([JSON.stringify(d.keysAnswer, null, 2) + "\n"], { type: "application/json" }));
    return { journal, keys };
  }, [d]);
  useEffect(() => () => {
    URL.revokeObjectURL(urls.journal);
    URL.revokeObjectURL(urls.keys);
  }, [urls]);
  return (
    <>
      <a class="button" href={urls.journal} download={`journal-${executionId}.ndjson`} data-testid="download-journal">
        Download the export
      </a>
      <a class="button" href={urls.keys} download="keys.json">
        Download the public keys
      </a>
    </>
  );
}

function Offline({ d, executionId }: { d: Loaded; executionId: string }) {
  return (
    <details class="offline">
      <summary>Verify it yourself, offline</summary>
      <p>
        The download is the export exactly as the server sent it ({d.bytes.length} bytes, SHA-256{" "}
        <code data-testid="file-sha256">{d.fileSha256 || "—"}</code>). Check it without this page or the server:
      </p>
      <pre>{`yukta journal verify journal-${executionId}.ndjson --public-key keys.json`}</pre>
      <p class="muted small">
        Exit 0 is VALID, 1 INVALID, 3 UNANCHORED. docs/journal.md has the format and a recipe in JavaScript for other tools.
      </p>
    </details>
  );
}

// ---------------------------------------------------------------- records

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj | undefined => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : undefined);

function seqOf(l: Line): number | undefined {
  const s = asObj(l.value)?.sequence;
  return typeof s === "number" ? s : undefined;
}

function bodyOf(l: Line): Obj | undefined {
  const v = asObj(l.value);
  return asObj(v?.event) ?? asObj(v?.decision);
}

function text(v: unknown): string {
  return typeof v === "string" ? v : v === undefined ? "" : JSON.stringify(v);
}

function summary(l: Line): string {
  const v = asObj(l.value);
  if (v?.checkpoint) {
    const c = asObj(v.checkpoint);
    return `signed checkpoint at sequence ${text(c?.sequence)} by key ${text(c?.keyId) || "(unnamed)"}`;
  }
  const b = bodyOf(l);
  if (!b) return "not a record";
  const data = asObj(b.data) ?? {};
  const parts: string[] = [];
  if (b.nodeId) parts.push(text(b.nodeId));
  const cause = asObj(b.cause);
  if (cause) {
    parts.push([cause.action, cause.signal].filter(Boolean).map(text).join(" "));
    if (cause.reason) parts.push(`“${text(cause.reason)}”`);
  } else if (data.to !== undefined || data.status !== undefined) {
    parts.push(data.to !== undefined ? `${text(data.from)} → ${text(data.to)}` : `→ ${text(data.status)}`);
    if (data.received !== undefined) parts.push(`received ${text(data.received)}, emitted ${text(data.emitted)}`);
    if (data.error) parts.push(text(data.error));
  } else {
    for (const [k, x] of Object.entries(data).slice(0, 3)) if (typeof x !== "object" || x === null) parts.push(`${k}=${text(x)}`);
  }
  let s = parts.filter(Boolean).join(" · ");
  for (const [p, digits] of l.exact ?? []) s = s.split(p).join(digits); // integers beyond 2^53, exactly
  return s.length > 160 ? s.slice(0, 159) + "…" : s;
}

function Records(p: {
  lines: Line[]; page: number; setPage: (n: number) => void; open?: number; setOpen: (n?: number) => void;
  reveal: (seq: number) => boolean; bad?: number;
}) {
  const pages = Math.max(1, Math.ceil(p.lines.length / perPage));
  const page = Math.min(p.page, pages - 1);
  const shown = p.lines.slice(page * perPage, (page + 1) * perPage);
  const [goto, setGoto] = useState("");
  const [gotoError, setGotoError] = useState("");
  return (
    <section class="records" aria-labelledby="records-h">
      <h2 id="records-h">Records</h2>
      <div class="toolbar">
        <button type="button" onClick={() => p.setPage(page - 1)} disabled={page === 0}>
          Previous
        </button>
        <span aria-live="polite">
          Lines {p.lines.length ? page * perPage + 1 : 0}–{Math.min(p.lines.length, (page + 1) * perPage)} of {p.lines.length} (page {page + 1} of {pages})
        </span>
        <button type="button" onClick={() => p.setPage(page + 1)} disabled={page >= pages - 1}>
          Next
        </button>
        <form class="row" onSubmit={(e) => {
          e.preventDefault();
          const n = Number(goto);
          if (!Number.isInteger(n) || n < 1) setGotoError("Sequence: give a whole number from 1.");
          else if (!p.reveal(n)) setGotoError(`Sequence: the journal has no record ${n}.`);
          else setGotoError("");
        }}>
          <label for="goto-seq">Sequence</label>
          <input id="goto-seq" type="number" min={1} value={goto} aria-invalid={!!gotoError} aria-describedby="goto-seq-error"
            onInput={(e) => setGoto((e.target as HTMLInputElement).value)} />
          <button type="submit">Show</button>
          <span id="goto-seq-error" class="field-error" aria-live="polite">{gotoError}</span>
        </form>
      </div>
      <div class="table-wrap">
        <table>
          <thead>
            <tr><th>Seq</th><th>Observed</th><th>Type</th><th>Actor</th><th>Summary</th></tr>
          </thead>
          <tbody>
            {shown.map((l, i) => {
              const seq = seqOf(l);
              const key = seq ?? `line-${page * perPage + i}`;
              const b = bodyOf(l);
              const v = asObj(l.value);
              const isOpen = seq !== undefined && p.open === seq;
              const cls = [seq !== undefined && seq === p.bad ? "bad" : "", v?.checkpoint ? "checkpoint" : ""].filter(Boolean).join(" ");
              return [
                <tr key={key} class={cls} data-seq={seq}>
                  <td>
                    {seq !== undefined ? (
                      <button type="button" id={`rec-${seq}`} class="link mono" aria-expanded={isOpen} aria-controls={`rec-${seq}-json`}
                        onClick={() => p.setOpen(isOpen ? undefined : seq)}>
                        {seq}
                      </button>
                    ) : (
                      <span class="muted">{v?.checkpoint ? "✓" : "?"}</span>
                    )}
                  </td>
                  <td class="mono small">{text(v?.observedAt)}</td>
                  <td>
                    {text(b?.type)} {v?.kind === "decision" ? <span class="badge">decision</span> : null}
                  </td>
                  <td>
                    {text(b?.actor)} {b?.channel ? <span class="muted">via {text(b.channel)}</span> : null}
                  </td>
                  <td>{summary(l)}</td>
                </tr>,
                isOpen ? (
                  <tr key={`${key}-json`} id={`rec-${seq}-json`} class="json-row">
                    <td colSpan={5}>
                      <pre class="json" tabIndex={0} aria-label={`Record ${seq}`}>{writeExact(JSON.stringify(l.value, null, 2), l.exact)}</pre>
                      <p class="muted small">The line as exported (the exact text that was verified):</p>
                      <pre class="line" tabIndex={0} aria-label={`Record ${seq} as exported`}>{l.text}</pre>
                    </td>
                  </tr>
                ) : null,
              ];
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export const journal: Page = {
  path: "/sessions/:sessionId/executions/:executionId/journal",
  title: "Journal",
  component: Journal,
};
