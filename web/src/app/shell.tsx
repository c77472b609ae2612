// The frame around every page: the navigation, who is signed in, the open
// mode banner and the sign-in form. Nothing else is shown until the server
// said who the tab's key is (GET /api/self).
import { useEffect, useState } from "preact/hooks";
import { pages } from "../pages";
import type { Page } from "../pages/page";
import { can, key, rememberKey, signOut, signedIn, signedOutWhy, type Self } from "./auth";
import { ApiError, api, ok } from "./client";
import { match, useLocation } from "./router";
import { useStore } from "./store";
import { ProblemView } from "../components/load";

async function whoAmI(): Promise<Self> {
  return ok(api.GET("/api/self"));
}

export function Shell() {
  const self = useStore(signedIn);
  const [checking, setChecking] = useState(true);
  const [error, setError] = useState<Error>();

  useEffect(() => {
    whoAmI().then(
      (s) => signedIn.set(s),
      (e: Error) => {
        if (!(e instanceof ApiError && e.status === 401)) setError(e);
        else if (key()) signOut(e.message);
      },
    ).finally(() => setChecking(false));
  }, []);

  if (checking) return <p class="muted center">Connecting…</p>;
  if (!self) return <SignIn initialError={error} />;
  return <Frame self={self} />;
}

function SignIn({ initialError }: { initialError?: Error }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState<Error | undefined>(initialError);
  const [busy, setBusy] = useState(false);
  const why = useStore(signedOutWhy);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    signedOutWhy.set(null);
    rememberKey(value.trim());
    try {
      signedIn.set(await whoAmI());
    } catch (err) {
      signOut();
      setValue(""); // a refused key is not worth keeping on screen
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <h1>Yukta</h1>
      {why ? (
        <p class="problem" role="alert" data-testid="signed-out">
          Signed out: {why}
        </p>
      ) : null}
      <form onSubmit={submit} aria-label="Sign in">
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
        <p class="muted small">The key stays in this tab only: a reload keeps it, closing the tab forgets it.</p>
        <button type="submit" disabled={busy || !value.trim()}>Sign in</button>
      </form>
      <ProblemView error={error} />
    </main>
  );
}

function Frame({ self }: { self: Self }) {
  const loc = useLocation();
  let page: Page | undefined;
  let params: Record<string, string> = {};
  for (const p of pages) {
    const m = match(p.path, loc.pathname);
    if (m) {
      page = p;
      params = m;
      break;
    }
  }
  useEffect(() => {
    document.title = page ? `${page.title} · Yukta` : "Not found · Yukta";
  }, [page]);
  const Component = page?.component;
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href="/">Yukta</a>
        <nav aria-label="Main">
          {pages
            .filter((p) => p.nav && can(p.role ?? "VIEWER", self))
            .map((p) => (
              <a key={p.path} href={p.path} aria-current={loc.pathname.startsWith(p.path) && p.path !== "/" ? "page" : undefined}>
                {p.nav}
              </a>
            ))}
        </nav>
        <span class="who" data-testid="who">
          <span class="name">{self.name}</span> <span class="badge role">{self.role}</span>
          {self.sessions ? <span class="muted small"> · sessions {self.sessions.join(", ")}</span> : null}
          {!self.open ? (
            <button class="link" onClick={() => signOut()}>
              Sign out
            </button>
          ) : null}
        </span>
      </header>
      {self.open ? (
        <div class="banner" role="status">
          Open mode: no API key is configured, so anyone who can reach this loopback address is ADMIN. Configure keys
          (docs/security.md) before binding to a network.
        </div>
      ) : null}
      <main id="main" tabIndex={-1}>
        {Component && (!page?.role || can(page.role, self)) ? (
          <Component key={loc.pathname} params={params} query={loc.searchParams} />
        ) : (
          <section>
            <h1>Not found</h1>
            <p>
              No page at <code>{loc.pathname}</code>. <a href="/sessions">Go to the sessions</a>.
            </p>
          </section>
        )}
      </main>
    </>
  );
}
