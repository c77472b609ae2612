// Status badges and times: the same words and colours on every page.
export function Status({ status }: { status?: string }) {
  if (!status) return null;
  return <span class={"badge s-" + status.toLowerCase()}>{status}</span>;
}

export function Time({ at }: { at?: string }) {
  if (!at) return <span class="muted">—</span>;
  const d = new Date(at);
  return (
    <time dateTime={at} title={d.toISOString()}>
      {d.toLocaleString()}
    </time>
  );
}

/** duration between two times (or from start to now) as "1h 2m", "3.4 s" or "120 ms". */
export function duration(from?: string, to?: string): string {
  if (!from) return "—";
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  return millis(ms);
}

export function millis(ms: number): string {
  if (!isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  if (m < 60) return `${m}m ${Math.round((ms % 60_000) / 1000)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}
