// Loading a resource for a page: the data, the server's problem if the call
// failed, and a reload. Pages call useLoad with a function of the API
// client; the dependencies say when to load again.
import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError } from "../app/client";

export interface Loaded<T> {
  data?: T;
  error?: ApiError | Error;
  loading: boolean;
  reload(): void;
}

export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, loading: false }),
      (error: Error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** ProblemView shows what the server said went wrong, as it said it. */
export function ProblemView({ error }: { error?: Error }) {
  if (!error) return null;
  const p = error instanceof ApiError ? error.problem : undefined;
  return (
    <div class="problem" role="alert">
      <strong>{p?.title ?? "Error"}</strong>
      {error instanceof ApiError ? <span class="muted"> ({error.status})</span> : null}
      <p>{p?.detail ?? error.message}</p>
      {p?.errors?.length ? (
        <ul>
          {p.errors.map((e, i) => (
            <li key={i}>
              {e.path ? <code>{e.path}</code> : null} {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}
