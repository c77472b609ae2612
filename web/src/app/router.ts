// The console's locations are shaped like the REST paths they show
// (/sessions/{sessionId}/executions/{executionId} reads
// /api/sessions/{sessionId}/executions/{executionId}), so a link can be
// shared and survives a reload: the server answers every page path with
// index.html and the router picks the page here.
import { store, useStore } from "./store";

export const location = store<URL>(new URL(window.location.href));

window.addEventListener("popstate", () => location.set(new URL(window.location.href)));

export function navigate(to: string, replace = false) {
  const url = new URL(to, window.location.origin);
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  location.set(url);
  window.scrollTo(0, 0);
}

/** setQuery changes the query of the current location without a new history entry. */
export function setQuery(params: Record<string, string | undefined>) {
  const url = new URL(window.location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === "") url.searchParams.delete(k);
    else url.searchParams.set(k, v);
  }
  navigate(url.pathname + url.search + url.hash, true);
}

export function useLocation(): URL {
  return useStore(location);
}

/** match returns the parameters of path against pattern ("/sessions/:sessionId"), or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split("/").filter(Boolean);
  const xs = path.split("/").filter(Boolean);
  if (ps.length !== xs.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i]!;
    const x = xs[i]!;
    if (p.startsWith(":")) {
      try {
        params[p.slice(1)] = decodeURIComponent(x);
      } catch {
        return null;
      }
    } else if (p !== x) return null;
  }
  return params;
}

/** path builds a location from a pattern and its parameters, escaping each. */
export function path(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_, k: string) => encodeURIComponent(params[k] ?? ""));
}

// Clicks on same-origin links move within the page instead of reloading it.
document.addEventListener("click", (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.("a");
  if (!a || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, window.location.href);
  if (url.origin !== window.location.origin || url.pathname.startsWith("/api/")) return;
  e.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});
