// Follows a Server-Sent Events stream of the API. EventSource cannot send
// the Authorization header, so this reads the stream with fetch, and after
// a dropped connection it reconnects with Last-Event-ID: the server
// resumes after the last event seen, so nothing is lost or shown twice.
// Events reach the page in batches, at most one per animation frame, so a
// run writing thousands of events a second costs one render per frame.
import { authHeaders } from "./client";

export interface StreamEvent {
  id: string;
  type: string;
  data: unknown;
}

export type StreamState = "connecting" | "live" | "reconnecting" | "ended" | "refused";

export interface Follow {
  /** onEvents gets every event, in order, batched per frame. */
  onEvents(events: StreamEvent[]): void;
  onState?(state: StreamState, detail?: string): void;
  /** after resumes after this event id (e.g. one already shown). */
  after?: string;
}

const maxBackoffMs = 10_000;

/** follow reads path until signal aborts; it reconnects after drops, with backoff. */
export function follow(path: string, f: Follow, signal: AbortSignal) {
  let last = f.after ?? "";
  let pending: StreamEvent[] = [];
  let frame = 0;
  const flush = () => {
    frame = 0;
    const batch = pending;
    pending = [];
    if (batch.length && !signal.aborted) f.onEvents(batch);
  };
  const push = (ev: StreamEvent) => {
    pending.push(ev);
    if (!frame) frame = requestAnimationFrame(flush);
  };
  signal.addEventListener("abort", () => frame && cancelAnimationFrame(frame));

  (async () => {
    let backoff = 500;
    let first = true;
    while (!signal.aborted) {
      f.onState?.(first ? "connecting" : "reconnecting");
      first = false;
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream", ...authHeaders() };
        if (last) headers["Last-Event-ID"] = last;
        const res = await fetch(path, { headers, signal, cache: "no-store" });
        if (res.status === 401 || res.status === 403 || res.status === 404) {
          const p = await res.json().catch(() => ({}));
          f.onState?.("refused", (p as { detail?: string }).detail ?? `the server answered ${res.status}`);
          return;
        }
        if (!res.ok || !res.body) throw new Error(`the server answered ${res.status}`);
        f.onState?.("live");
        backoff = 500;
        for await (const ev of records(res.body, signal)) {
          if (ev.type === "error") {
            const p = ev.data as { detail?: string; status?: number };
            f.onState?.("refused", p?.detail ?? "the server ended the stream");
            return;
          }
          if (ev.id) last = ev.id;
          push(ev);
        }
      } catch (err) {
        if (signal.aborted) return;
        f.onState?.("reconnecting", String(err));
      }
      if (signal.aborted) return;
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, maxBackoffMs);
    }
  })();
}

async function* records(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  const reader = (body as ReadableStream<BufferSource>).pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let id = "";
  let type = "message";
  let data: string[] = [];
  try {
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (data.length) {
            let parsed: unknown = data.join("\n");
            try {
              parsed = JSON.parse(parsed as string);
            } catch {
              /* not JSON: hand the text on */
            }
            yield { id, type, data: parsed };
          }
          type = "message";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") id = val;
        else if (field === "event") type = val;
        else if (field === "data") data.push(val);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function sleep(ms: number, signal: AbortSignal) {
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}
