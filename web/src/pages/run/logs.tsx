// The run's log: GET …/logs, the last lines (up to 5,000) matching an RE2
// pattern the server checks (a bad one is answered 400 with the server's
// sentence, shown as it wrote it). The API has no cursor for logs, so
// Follow re-reads the tail every second while the run is live, one read at a
// time, and stops after one last read once the run has finished. At most
// tailLines lines are ever in the page.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok, type Schemas } from "../../app/client";
import { ProblemView } from "../../components/load";

type LogPage = Schemas["LogPage"];

const followEveryMs = 1000;

export function Logs({ sessionId, executionId, live }: { sessionId: string; executionId: string; live: boolean }) {
  const [pattern, setPattern] = useState("");
  const [applied, setApplied] = useState({ pattern: "", tail: 200 });
  const [tail, setTail] = useState(200);
  const [follow, setFollow] = useState(true);
  const [page, setPage] = useState<LogPage>();
  const [error, setError] = useState<Error>();
  const [reads, setReads] = useState(0);
  const liveRef = useRef(live);
  liveRef.current = live;

  useEffect(() => {
    const ctl = new AbortController();
    let timer = 0;
    const read = async () => {
      const wasLive = liveRef.current;
      try {
        const p = await ok(api.GET("/api/sessions/{sessionId}/executions/{executionId}/logs", {
          params: {
            path: { sessionId, executionId },
            query: { tailLines: applied.tail, filterPattern: applied.pattern || undefined },
          },
          signal: ctl.signal,
        }));
        if (ctl.signal.aborted) return;
        setPage(p);
        setError(undefined);
        setReads((n) => n + 1);
      } catch (e) {
        if (ctl.signal.aborted) return;
        setError(e as Error);
        return; // a refused filter is not retried until it changes
      }
      if (follow && wasLive && !ctl.signal.aborted) timer = window.setTimeout(read, followEveryMs);
    };
    read();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [sessionId, executionId, applied, follow, live]);

  const submit = (e: Event) => {
    e.preventDefault();
    setApplied({ pattern: pattern.trim(), tail });
  };
  return (
    <section class="panel logs" aria-labelledby="logs-h">
      <h2 id="logs-h">Logs</h2>
      <form class="toolbar" onSubmit={submit} aria-label="Filter the log">
        <label for="log-pattern">Filter (RE2)</label>
        <input id="log-pattern" value={pattern} placeholder="\[ERROR\]|timeout" class="mono"
          aria-describedby="log-pattern-help" onInput={(e) => setPattern((e.target as HTMLInputElement).value)} />
        <label for="log-tail">Lines</label>
        <input id="log-tail" type="number" min={1} max={5000} value={tail} class="narrow"
          onInput={(e) => setTail(Math.max(1, Math.min(5000, Number((e.target as HTMLInputElement).value) || 200)))} />
        <button type="submit" data-testid="log-apply">Apply</button>
        <label class="check">
          <input type="checkbox" checked={follow} data-testid="log-follow"
            onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> Follow
        </label>
      </form>
      <p id="log-pattern-help" class="muted small">
        Each line is matched as <code>[timestamp] [LEVEL] message</code>. {follow && live ? "Following: re-read every second." : ""}
      </p>
      <ProblemView error={error} />
      {page ? (
        <>
          <p class="muted small" aria-live="polite" data-testid="log-count" data-reads={reads}>
            {page.returnedLines} of {page.totalMatched}{page.complete ? "" : "+"} matching line(s)
            {applied.pattern ? <> for <code>{applied.pattern}</code></> : null}
          </p>
          {page.lines.length === 0 ? <p class="muted">No line matches yet.</p> : null}
          <ol class="log-lines" data-testid="log-lines" tabIndex={0} aria-label="Log lines">
            {page.lines.map((l) => (
              <li key={l.seq} class={"lvl-" + l.level.toLowerCase()}>
                <time dateTime={l.at}>{l.at.slice(11, 23)}</time> <span class="lvl">{l.level}</span>{" "}
                <span class="node">{l.nodeId}</span> <span class="msg">{l.message}</span>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </section>
  );
}
