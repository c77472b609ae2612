// Verifies a journal export in the browser, independently of the server
// that wrote it: SHA-256 and Ed25519 through WebCrypto, RFC 8785 canonical
// JSON through the pinned `canonicalize` package. It follows the Go
// verifier (domain/journal: VerifyExportKeys) check for check, so the badge
// and `yukta journal verify` give the same answer, reason and first bad
// sequence (docs/journal.md, "Verifying"; web/verify_test checks the two
// agree on real and tampered exports).
//
// What is hashed: a record's digest is "sha256:" + hex SHA-256 of the
// canonical JSON of the record without its "digest" member. The export
// holds each record as that canonical JSON (digest included), so the bytes
// hashed here are the line's own bytes less the digest member, exactly as
// the server hashed them. canonicalize checks them: the line is re-encoded
// and compared with its text, which confirms the encoder agrees with the
// server's byte for byte; a line that is not canonical (edited, or
// reformatted) is hashed as the canonical JSON of what it says, as the
// server's verifier does. Numbers are never rounded: an integer no
// double holds exactly (beyond 2^53) is read from its source text and written
// as its exact digits, as the server writes it.
import canonicalize from "canonicalize";

export type Verdict = "VALID" | "UNANCHORED" | "INVALID";

/** The reasons, named as the server and the CLI name them. */
export type Reason =
  | "wrong_schema_version" | "malformed" | "wrong_execution" | "reorder" | "gap" | "digest_mismatch" | "broken_link"
  | "no_checkpoint" | "no_public_key" | "unknown_key" | "bad_signature" | "checkpoint_mismatch";

/** Verification is what the browser found: the same members as the server's JournalVerification. */
export interface Verification {
  result: Verdict;
  /** the last record that verified (0 when none did) */
  sequence: number;
  chainTip?: string;
  /** INVALID: the first sequence that cannot be trusted (absent when no one record is to blame) */
  firstBadSequence?: number;
  reason?: Reason;
  detail?: string;
  /** the key that verified the checkpoint (VALID) */
  keyId?: string;
}

/** Unavailable: this browser cannot verify (no WebCrypto, no Ed25519, …); nothing is claimed. */
export interface Unavailable {
  result: "UNAVAILABLE";
  detail: string;
  /** what the chain alone showed before the missing piece was needed, if anything */
  chain?: Verification;
}

export type Outcome = Verification | Unavailable;

/** One non-blank line of an export: its text and, when it is JSON, its value. */
export interface Line {
  text: string;
  value?: unknown;
  /** placeholders in value for integers no double holds, and their exact digits */
  exact?: Map<string, string>;
}

/** A public key as GET /api/journal/public-key lists it. */
export interface PublicKeyEntry {
  keyId?: string;
  publicKey: string;
}

/** KeysAnswer is the shape of GET /api/journal/public-key (the members read here). */
export interface KeysAnswer {
  publicKey?: string;
  keyId?: string;
  keys?: PublicKeyEntry[];
}

export interface TrustedKeys {
  /** by key id (computed here from the raw key, not taken from the answer) */
  keys: Map<string, CryptoKey>;
  /** keys left out, and why */
  warnings: string[];
}

const digestPattern = /^sha256:[0-9a-f]{64}$/;
const keyIdPattern = /^[0-9a-f]{16}$/;
const observedAtPattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{9}Z$/;
const recordMembers = new Set(["schemaVersion", "executionId", "sequence", "kind", "observedAt", "previousDigest", "event", "decision", "digest"]);

/** Why this browser cannot verify, or undefined when it can try. */
export function cryptoMissing(): string | undefined {
  if (typeof crypto === "undefined" || !crypto.subtle) {
    return (
      "This page is not a secure context, so the browser offers no WebCrypto (crypto.subtle) to check the journal with. " +
      "Open the console over HTTPS or on localhost, or verify the downloaded export with `yukta journal verify`."
    );
  }
  return undefined;
}

// ---------------------------------------------------------------- parsing

/** Not supported by this browser: reported as UNAVAILABLE, never as a verdict. */
class Unsupported extends Error {}

/** JSON.parse reviver's third argument (JSON.parse source text access; Chromium since 114). */
interface ReviverContext {
  source?: string;
}

/** ExactInts makes placeholder strings for integers no double holds; a line keeps the digits of its own. */
class ExactInts {
  private readonly nonce: string;
  private n = 0;
  constructor() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    this.nonce = "\u{E000}yukta-exact-" + hex(b) + "-";
  }
  placeholder(digits: Map<string, string>, d: string): string {
    const p = this.nonce + this.n++;
    digits.set(p, d);
    return p;
  }
}

/** writeExact replaces a line's placeholders in JSON text made from its value by their digits. */
export function writeExact(text: string, digits: Map<string, string> | undefined): string {
  if (!digits) return text;
  let out = text;
  for (const [p, d] of digits) out = out.split(JSON.stringify(p)).join(d);
  return out;
}

// A run of 16 digits is the shortest text an integer beyond 2^53 can have;
// without one (nearly every line) JSON.parse reads the line exactly. Lone
// surrogate escapes are read as U+FFFD, as the server's decoder reads them.
const mayNeedSource = /\d{16}|\\u[dD][89a-fA-F]/;

/** parseLine reads one line into line.value; numbers stay exact (placeholders in line.exact). */
function parseLine(line: Line, exact: ExactInts) {
  const text = line.text;
  if (!mayNeedSource.test(text)) {
    line.value = JSON.parse(text);
    return;
  }
  const digits = new Map<string, string>();
  line.value = JSON.parse(text, function (this: unknown, _key: string, value: unknown, ctx?: ReviverContext) {
    if (typeof value === "string") return wellFormed(value);
    if (typeof value !== "number" || !Number.isInteger(value) && isFinite(value)) return value;
    if (ctx?.source === undefined) {
      if (Number.isSafeInteger(value)) return value;
      throw new Unsupported(
        "a record holds a number beyond 2^53, and this browser's JSON.parse cannot give its exact digits (it lacks JSON.parse source text access, which Chromium has had since 114)",
      );
    }
    const src = ctx.source;
    if (/[.eE]/.test(src)) return value; // a fraction or exponent: read as a double, as the server reads it
    const n = BigInt(src);
    if (isFinite(value) && BigInt(value) === n) return value; // a double holds it exactly
    return exact.placeholder(digits, n.toString());
  });
  if (digits.size) line.exact = digits;
}

/** wellFormed replaces lone surrogates by U+FFFD (String.prototype.toWellFormed, ES2024). */
function wellFormed(s: string): string {
  const w = s as string & { isWellFormed(): boolean; toWellFormed(): string };
  return w.isWellFormed() ? s : w.toWellFormed();
}

/** duplicateMember names a member that appears twice in one object of valid JSON text (the server refuses those). */
function duplicateMember(text: string): string | undefined {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        const k = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.has(k)) return k;
        top.add(k);
        expectKey = false;
      }
      i = j;
    } else if (c === "{") {
      stack.push(new Set());
      expectKey = true;
    } else if (c === "[") stack.push(null);
    else if (c === "}" || c === "]") stack.pop();
    else if (c === ",") expectKey = stack[stack.length - 1] instanceof Set;
  }
  return undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Rec is a line read as a record (the members verification needs) or the complaint of the server's parser. */
interface Rec {
  schemaVersion: number;
  executionId: string;
  sequence: number;
  kind: string;
  previousDigest?: string;
  hasEvent: boolean;
  hasDecision: boolean;
  digest: string;
  /** the canonical JSON of the record without its digest: the bytes hashed */
  hashed?: string;
  /** why it cannot be hashed (no canonical form) */
  hashError?: string;
  /** the line's text differs from its canonical form */
  notCanonical: boolean;
}

const positiveInteger = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= Number.MAX_SAFE_INTEGER;

function validObservedAt(s: string): boolean {
  const m = observedAtPattern.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return d.getUTCFullYear() === +m[1]! && d.getUTCMonth() === +m[2]! - 1 && d.getUTCDate() === +m[3]! &&
    d.getUTCHours() === +m[4]! && d.getUTCMinutes() === +m[5]! && d.getUTCSeconds() === +m[6]!;
}

/** readRecord mirrors ParseRecord: the shape only, nothing recomputed. */
function readRecord(line: Line): Rec | string {
  const m = line.value;
  if (m === undefined) return "is not JSON";
  if (!isObj(m)) return "is not a JSON object";
  const dup = duplicateOrNot(line, m);
  if (dup.duplicate) return `has the member ${JSON.stringify(dup.duplicate)} twice`;
  const bad: string[] = [];
  for (const k of Object.keys(m)) if (!recordMembers.has(k)) bad.push(`${k}: is not a record member`);
  if (!positiveInteger(m.schemaVersion)) bad.push("schemaVersion: must be a positive integer");
  if (typeof m.executionId !== "string" || m.executionId === "") bad.push("executionId: must be a non-empty string");
  if (!positiveInteger(m.sequence)) bad.push("sequence: must be an integer from 1 to 2^53-1");
  if (m.kind !== "event" && m.kind !== "decision") bad.push('kind: must be "event" or "decision"');
  if (typeof m.observedAt !== "string") bad.push("observedAt: must be a string");
  else if (!validObservedAt(m.observedAt)) bad.push("observedAt: must be RFC 3339 in UTC with nine fractional digits");
  if ("previousDigest" in m && !(typeof m.previousDigest === "string" && digestPattern.test(m.previousDigest)))
    bad.push('previousDigest: must be "sha256:" and 64 lowercase hex digits');
  if (!(typeof m.digest === "string" && digestPattern.test(m.digest))) bad.push('digest: must be "sha256:" and 64 lowercase hex digits');
  const hasEvent = "event" in m, hasDecision = "decision" in m;
  if (hasEvent && hasDecision) bad.push("has both event and decision; a record holds exactly one");
  else if (m.kind === "event" && !hasEvent) bad.push("event: is required on an event record");
  else if (m.kind === "decision" && !hasDecision) bad.push("decision: is required on a decision record");
  else if (m.kind === "event" && hasDecision) bad.push("decision: is not allowed on an event record");
  else if (m.kind === "decision" && hasEvent) bad.push("event: is not allowed on a decision record");
  if (hasEvent && !isObj(m.event)) bad.push("event: must be a JSON object");
  if (hasDecision && !isObj(m.decision)) bad.push("decision: must be a JSON object");
  if (bad.length) return bad.sort().join("; ");
  const { digest, ...rest } = m;
  const r: Rec = {
    schemaVersion: m.schemaVersion as number, executionId: m.executionId as string, sequence: m.sequence as number,
    kind: m.kind as string, previousDigest: m.previousDigest as string | undefined, hasEvent, hasDecision,
    digest: digest as string, notCanonical: dup.notCanonical,
  };
  // A canonical line is the record's canonical JSON with its digest: the
  // bytes the server hashed are the line less that member, taken as they
  // are. Any other line is hashed as the server would: canonical JSON of
  // what it says.
  const hashed = dup.notCanonical ? undefined : withoutDigest(line.text, r.digest);
  if (hashed !== undefined) r.hashed = hashed;
  else {
    try {
      r.hashed = writeExact(canonicalize(rest) as string, line.exact);
    } catch (e) {
      r.hashError = (e as Error).message;
    }
  }
  return r;
}

/**
 * withoutDigest cuts the top-level digest member out of a canonical record
 * line. Members are sorted, so it comes first, or second after "decision"
 * (the only member that sorts before it); every member after it is fixed by
 * the record's shape, so the last `,"digest":"…"` is the top-level one.
 */
function withoutDigest(text: string, digest: string): string | undefined {
  const first = `{"digest":${JSON.stringify(digest)},`;
  if (text.startsWith(first)) return "{" + text.slice(first.length);
  const member = `,"digest":${JSON.stringify(digest)}`;
  const at = text.lastIndexOf(member);
  if (!text.startsWith('{"decision":') || at < 0) return undefined;
  return text.slice(0, at) + text.slice(at + member.length);
}

/** duplicateOrNot compares the line with its canonical form, and looks for a duplicate member only when they differ. */
function duplicateOrNot(line: Line, value: unknown): { notCanonical: boolean; duplicate?: string } {
  let canonical: string | undefined;
  try {
    canonical = writeExact(canonicalize(value) as string, line.exact);
  } catch {
    canonical = undefined;
  }
  if (canonical === line.text) return { notCanonical: false };
  return { notCanonical: true, duplicate: duplicateMember(line.text) };
}

interface Checkpoint {
  executionId: string;
  sequence: number;
  digest: string;
  signature: Uint8Array<ArrayBuffer>;
  keyId?: string;
}

/** isCheckpointLine mirrors IsCheckpointLine: a JSON object whose only member is "checkpoint". */
function isCheckpointLine(line: Line): boolean {
  const v = line.value;
  if (!isObj(v)) return false;
  const ks = Object.keys(v);
  return ks.length === 1 && ks[0] === "checkpoint" && !duplicateMember(line.text);
}

/** readCheckpoint mirrors ParseCheckpointLine. */
function readCheckpoint(v: unknown): Checkpoint | string {
  const m = isObj(v) ? v.checkpoint : undefined;
  if (!isObj(m)) return '"checkpoint" must be an object';
  for (const k of Object.keys(m)) {
    if (!["executionId", "sequence", "digest", "signature", "keyId"].includes(k)) return `${JSON.stringify(k)} is not a checkpoint member`;
  }
  if (typeof m.executionId !== "string" || m.executionId === "") return "executionId must be a non-empty string";
  if (!positiveInteger(m.sequence)) return "sequence must be an integer from 1 to 2^53-1";
  if (typeof m.digest !== "string" || !digestPattern.test(m.digest)) return 'digest must be "sha256:" and 64 lowercase hex digits';
  if ("keyId" in m && !(typeof m.keyId === "string" && keyIdPattern.test(m.keyId)))
    return "keyId must be 16 lowercase hex digits (the key id of GET /api/journal/public-key)";
  const sig = typeof m.signature === "string" ? base64(m.signature) : undefined;
  if (!sig || sig.length !== 64) return "signature must be the standard base64 of a 64-byte ed25519 signature";
  return { executionId: m.executionId, sequence: m.sequence as number, digest: m.digest, signature: sig, keyId: m.keyId as string | undefined };
}

// ---------------------------------------------------------------- helpers

function hex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** base64 decodes standard base64 (with padding), or undefined. */
function base64(s: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return undefined;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const utf8 = new TextEncoder();

/**
 * pauser returns a function to await between records: it gives the main
 * thread back (a new task) once ~25 ms of work have passed, so a long
 * journal does not freeze the page while it is read.
 */
function pauser(): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since < 25) return undefined;
    return new Promise<void>((resolve) => setTimeout(() => {
      since = performance.now();
      resolve();
    }, 0));
  };
}

async function sha256Hex(text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(text))));
}

/** Whitespace as Go's bytes.TrimSpace trims it. */
const space = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** splitExport cuts an export into its non-blank lines, each read as JSON when it is JSON. */
export async function splitExport(text: string): Promise<Line[]> {
  const exact = new ExactInts();
  const out: Line[] = [];
  const pause = pauser();
  for (const raw of text.split("\n")) {
    const paused = pause();
    if (paused) await paused;
    const t = raw.replace(space, "");
    if (t === "") continue;
    const line: Line = { text: t };
    try {
      parseLine(line, exact);
    } catch (e) {
      if (e instanceof Unsupported) throw e;
    }
    out.push(line);
  }
  return out;
}

// ---------------------------------------------------------------- keys

/**
 * trustedKeys imports the public-key answer's keys for Ed25519. Each key's id
 * is computed here (first 8 bytes of the SHA-256 of the raw key); a listed
 * keyId that is not its key's id leaves the key out, with a warning. It
 * throws Unsupported when the browser has no Ed25519.
 */
export async function trustedKeys(answer: KeysAnswer | undefined): Promise<TrustedKeys> {
  const out: TrustedKeys = { keys: new Map(), warnings: [] };
  const entries: { where: string; e: PublicKeyEntry }[] = [];
  if (answer?.publicKey) entries.push({ where: "publicKey", e: { publicKey: answer.publicKey, keyId: answer.keyId } });
  (answer?.keys ?? []).forEach((e, i) => entries.push({ where: `keys[${i}]`, e }));
  for (const { where, e } of entries) {
    const raw = base64(e.publicKey);
    if (!raw || raw.length !== 32) {
      out.warnings.push(`${where}: not the standard base64 of a 32-byte ed25519 public key; left out`);
      continue;
    }
    const id = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", raw)).slice(0, 8));
    if (e.keyId !== undefined && e.keyId !== id) {
      out.warnings.push(`${where}: keyId ${e.keyId} is not the id of its key (${id}); left out`);
      continue;
    }
    if (out.keys.has(id)) continue;
    try {
      out.keys.set(id, await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]));
    } catch (err) {
      if ((err as Error).name === "NotSupportedError" || (err as Error).name === "TypeError")
        throw new Unsupported("this browser's WebCrypto has no Ed25519 (Chrome 137+, Firefox 129+, Safari 17+ have it)");
      out.warnings.push(`${where}: the browser refused the key (${(err as Error).message}); left out`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- verifying

/** chain mirrors Verify: the first record that breaks the chain, in the server's order of checks. */
async function chain(records: Rec[]): Promise<Verification> {
  const rep: Verification = { result: "VALID", sequence: 0 };
  // The execution most records name, the earliest on a tie.
  const counts = new Map<string, number>();
  let exec = "";
  for (const r of records) {
    const n = (counts.get(r.executionId) ?? 0) + 1;
    counts.set(r.executionId, n);
    if (exec === "" || n > (counts.get(exec) ?? 0)) exec = r.executionId;
  }
  // Hash the records 256 at a time (each digest stands alone); the walk below reads them in order.
  const sums: (string | undefined)[] = [];
  for (let i = 0; i < records.length; i += 256) {
    sums.push(...(await Promise.all(records.slice(i, i + 256).map((r) => (r.hashed === undefined ? undefined : sha256Hex(r.hashed))))));
  }
  const fail = (reason: Reason, detail: string): Verification => ({ ...rep, result: "INVALID", firstBadSequence: rep.sequence + 1, reason, detail });
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const want = rep.sequence + 1;
    if (r.schemaVersion !== 1)
      return fail("wrong_schema_version", `record at sequence ${want} has schemaVersion ${r.schemaVersion}; this verifier reads 1`);
    if (r.executionId !== exec)
      return fail("wrong_execution", `record at sequence ${want} belongs to execution ${JSON.stringify(r.executionId)}, not ${JSON.stringify(exec)}`);
    if (r.sequence !== want) {
      if (r.sequence < want) return fail("reorder", `sequence ${r.sequence} follows ${rep.sequence}: sequences must increase`);
      if (records.slice(i + 1).some((x) => x.sequence === want))
        return fail("reorder", `sequence ${r.sequence} comes before ${want}: records are out of order`);
      return fail("gap", `sequence ${want} is missing: ${r.sequence} follows ${rep.sequence}`);
    }
    const sum = sums[i];
    if (sum === undefined) return fail("digest_mismatch", `record ${want} cannot be hashed: ${r.hashError}`);
    if ("sha256:" + sum !== r.digest) {
      const note = r.notCanonical ? " (its line is not in canonical form, as the server writes it: the line was edited)" : "";
      return fail("digest_mismatch", `record ${want} says digest ${r.digest} but hashes to sha256:${sum}${note}`);
    }
    if (i === 0) {
      if (r.previousDigest !== undefined) return fail("broken_link", `record ${want} is first but names a previous digest ${r.previousDigest}`);
    } else if (r.previousDigest !== records[i - 1]!.digest) {
      return fail("broken_link", `record ${want} names previous digest ${r.previousDigest ?? "(none)"} but record ${rep.sequence} has ${records[i - 1]!.digest}`);
    }
    rep.sequence = r.sequence;
    rep.chainTip = r.digest;
  }
  return rep;
}

/** records reads record lines; a line that is not a record ends the list, with its complaint. */
async function records(lines: Line[]): Promise<{ recs: Rec[]; bad?: string }> {
  const recs: Rec[] = [];
  const pause = pauser();
  for (const l of lines) {
    const paused = pause();
    if (paused) await paused;
    const r = readRecord(l);
    if (typeof r === "string") return { recs, bad: r };
    recs.push(r);
  }
  return { recs };
}

/** verifyLines mirrors VerifyLinesKeys: the records, then the checkpoint. */
async function verifyLines(lines: Line[], cp: Checkpoint | undefined, keys: Map<string, CryptoKey>): Promise<Verification> {
  const { recs, bad } = await records(lines);
  const rep = await chain(recs);
  if (rep.result === "INVALID") return rep;
  if (bad !== undefined) {
    return { result: "INVALID", sequence: rep.sequence, chainTip: rep.chainTip, firstBadSequence: rep.sequence + 1, reason: "malformed",
      detail: `record at sequence ${rep.sequence + 1} does not parse: ${bad}` };
  }
  const unanchored = (reason: Reason, detail: string): Verification => ({ ...rep, result: "UNANCHORED", reason, detail });
  if (!cp) return unanchored("no_checkpoint", "no signed checkpoint: a cut tail or a recomputed chain would not show");
  if (keys.size === 0) return unanchored("no_public_key", "no ed25519 public key to check the checkpoint with");
  const payload = utf8.encode(canonicalize({ digest: cp.digest, executionId: cp.executionId, sequence: cp.sequence }) as string);
  const check = (k: CryptoKey) => crypto.subtle.verify({ name: "Ed25519" }, k, cp.signature, payload);
  let by: string | undefined;
  if (cp.keyId !== undefined) {
    const k = keys.get(cp.keyId);
    if (!k) {
      return unanchored("unknown_key", `the checkpoint was signed by key ${cp.keyId}, which is not among the keys given (${[...keys.keys()].sort().join(", ")}); ` +
        "give every key the server lists (GET /api/journal/public-key)");
    }
    if (!(await check(k))) return unanchored("bad_signature", `the checkpoint signature does not verify with key ${cp.keyId}`);
    by = cp.keyId;
  } else {
    for (const id of [...keys.keys()].sort()) if (await check(keys.get(id)!)) { by = id; break; }
    if (by === undefined) {
      return unanchored("bad_signature", keys.size === 1 ? "the checkpoint signature does not verify with this public key"
        : `the checkpoint signature does not verify with any of the ${keys.size} keys given`);
    }
  }
  const mismatch = (firstBad: number, detail: string): Verification => {
    const v: Verification = { ...rep, result: "INVALID", reason: "checkpoint_mismatch", detail };
    if (firstBad > 0) v.firstBadSequence = firstBad;
    return v;
  };
  if (recs.length === 0) return mismatch(1, `the checkpoint covers ${cp.sequence} records of execution ${JSON.stringify(cp.executionId)} but the journal is empty`);
  const last = recs[recs.length - 1]!;
  if (cp.executionId !== last.executionId) return mismatch(0, `the checkpoint is for execution ${JSON.stringify(cp.executionId)}, the journal for ${JSON.stringify(last.executionId)}`);
  if (cp.sequence > last.sequence) return mismatch(last.sequence + 1, `the checkpoint covers sequence ${cp.sequence} but the journal ends at ${last.sequence}: its tail was cut`);
  if (cp.sequence < last.sequence) {
    if (recs[cp.sequence - 1]!.digest === cp.digest) return mismatch(cp.sequence + 1, `the journal goes on to sequence ${last.sequence} after the checkpoint at ${cp.sequence}`);
    return mismatch(0, `the checkpoint at sequence ${cp.sequence} names digest ${cp.digest} but the journal has ${recs[cp.sequence - 1]!.digest} there`);
  }
  if (cp.digest !== last.digest) return mismatch(0, `the checkpoint names digest ${cp.digest} for sequence ${cp.sequence} but the journal has ${last.digest}: the chain was rewritten`);
  return { ...rep, result: "VALID", keyId: by };
}

/** verifyParsed mirrors VerifyExportKeys on lines already split. */
async function verifyParsed(lines: Line[], keys: Map<string, CryptoKey>): Promise<Verification> {
  const recLines: Line[] = [];
  let cp: Checkpoint | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!isCheckpointLine(line)) {
      if (cp) {
        const res = await verifyLines(recLines, undefined, new Map());
        return { result: "INVALID", sequence: res.sequence, chainTip: res.chainTip, firstBadSequence: res.sequence + 1, reason: "malformed",
          detail: `line ${i + 1}: a record follows the checkpoint line, which must come last` };
      }
      recLines.push(line);
      continue;
    }
    let c: Checkpoint | string = readCheckpoint(line.value);
    if (typeof c !== "string" && cp) c = "a second checkpoint line";
    if (typeof c === "string") {
      const res = await verifyLines(recLines, undefined, new Map());
      if (res.result === "INVALID") return res;
      return { result: "INVALID", sequence: res.sequence, chainTip: res.chainTip, reason: "malformed", detail: `line ${i + 1}: journal checkpoint line: ${c}` };
    }
    cp = c;
  }
  return verifyLines(recLines, cp, keys);
}

/** Verified is an export read and verified: its lines (for showing) and the outcome. */
export interface Verified {
  lines: Line[];
  outcome: Outcome;
  /** keys the answer listed that were left out */
  warnings: string[];
  /** how long verifying took, in milliseconds */
  ms: number;
}

/**
 * verifyExport verifies the text of an export (GET …/journal) against the
 * public-key answer (GET /api/journal/public-key). Blank lines are ignored
 * (the line numbers in details count the others).
 */
export async function verifyExport(text: string, answer: KeysAnswer | undefined): Promise<Verified> {
  const t0 = performance.now();
  const missing = cryptoMissing();
  if (missing) return { lines: splitSafe(text), outcome: { result: "UNAVAILABLE", detail: missing }, warnings: [], ms: 0 };
  let lines: Line[] = [];
  try {
    lines = await splitExport(text);
    let keys: TrustedKeys = { keys: new Map(), warnings: [] };
    let noEd25519: string | undefined;
    try {
      keys = await trustedKeys(answer);
    } catch (e) {
      if (!(e instanceof Unsupported)) throw e;
      noEd25519 = e.message;
    }
    const outcome = await verifyParsed(lines, keys.keys);
    if (noEd25519 && outcome.result !== "INVALID") {
      return { lines, outcome: { result: "UNAVAILABLE", detail: `The signature cannot be checked: ${noEd25519}.`, chain: outcome }, warnings: keys.warnings, ms: performance.now() - t0 };
    }
    return { lines, outcome, warnings: keys.warnings, ms: performance.now() - t0 };
  } catch (e) {
    if (e instanceof Unsupported) return { lines: splitSafe(text), outcome: { result: "UNAVAILABLE", detail: `The journal cannot be read exactly: ${e.message}.` }, warnings: [], ms: 0 };
    throw e;
  }
}

function splitSafe(text: string): Line[] {
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => {
    try {
      return { text: l, value: JSON.parse(l) as unknown };
    } catch {
      return { text: l };
    }
  });
}
