// API keys (ADMIN): every key of the server, configured and stored, with
// its last use; create a stored key, rotate it, set or change its expiry,
// revoke it. A secret the server draws (create, rotate) is in its answer
// only: the page shows it once, in this page's state, and forgets it when
// the page goes; no list ever has it.
import "./page.css";
import { useState } from "preact/hooks";
import { signedIn } from "../../app/auth";
import { api, ok, type Schemas } from "../../app/client";
import { Action } from "../../components/action";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { Time } from "../../components/status";
import type { Page } from "../page";

type Key = Schemas["APIKey"];
type Issued = Schemas["IssuedAPIKey"];

const roles = ["VIEWER", "OPERATOR", "ADMIN", "WORKER"] as const;

/** isDuration tells a Go duration (720h, 1h30m, 90s) from a time, as `yukta keys` does. */
function isDuration(s: string): boolean {
  return /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/.test(s);
}

/** expiry is the body member a WHEN is sent as: ttl for a duration, expiresAt for a time. */
function expiry(when: string): { ttl?: string; expiresAt?: string } {
  const w = when.trim();
  if (!w) return {};
  return isDuration(w) ? { ttl: w } : { expiresAt: w };
}

function list(s: string): string[] | undefined {
  const xs = s.split(",").map((x) => x.trim()).filter(Boolean);
  return xs.length ? xs : undefined;
}

function me(): string {
  return "key:" + (signedIn.get()?.name ?? "?");
}

function Keys() {
  const keys = useLoad(() => ok(api.GET("/api/keys")), []);
  const [secret, setSecret] = useState<{ issued: Issued; action: string }>();
  // A revoked key's row goes with the list's reload: its answer is said here.
  const [notice, setNotice] = useState<string>();
  const issued = (issued: Issued, action: string) => {
    setSecret({ issued, action });
    keys.reload();
  };
  return (
    <section class="keys-page">
      <h1>API keys</h1>
      <p class="muted">
        Keys configured at start (YUKTA_API_KEY, YUKTA_API_KEYS, YUKTA_MCP_API_KEY) are changed where they are configured;
        stored keys (source <code>api</code>) are created, rotated, given an expiry and revoked here, with no restart.
      </p>
      {secret ? <SecretOnce {...secret} onDone={() => setSecret(undefined)} /> : null}
      <CreateKey onCreated={(k) => issued(k, "created")} />
      <section aria-labelledby="keys-h">
        <h2 id="keys-h">Keys</h2>
        <ProblemView error={keys.error} />
        {keys.loading && !keys.data ? <Loading what="the keys" /> : null}
        <p class={notice ? "answer" : undefined} aria-live="polite" data-testid="keys-notice">{notice}</p>
        {keys.data ? (
          <KeyTable items={keys.data.items} onRotated={(k) => issued(k, "rotated")} onChanged={keys.reload}
            onRevoked={(name) => { setNotice(`Key ${name} revoked by ${me()}: its secret is refused from now on.`); keys.reload(); }} />
        ) : null}
      </section>
    </section>
  );
}

/** SecretOnce shows a secret just drawn, with a copy button; nothing keeps it. */
function SecretOnce({ issued, action, onDone }: { issued: Issued; action: string; onDone: () => void }) {
  const [copied, setCopied] = useState<string>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(issued.secret);
      setCopied("copied to the clipboard");
    } catch {
      const el = document.getElementById("secret") as HTMLInputElement | null;
      el?.select();
      setCopied("the browser refused the clipboard: the secret is selected, copy it with the keyboard");
    }
  };
  return (
    <div class="panel secret" role="status" data-testid="secret-once">
      <p>
        <strong>
          Key <code>{issued.name}</code> {action}
        </strong>{" "}
        by {action === "rotated" ? issued.rotatedBy : issued.createdBy}. Its secret is shown <strong>this once</strong>: the
        server keeps only its hash, and this page forgets it when you leave. Send it as <code>Authorization: Bearer &lt;secret&gt;</code>.
      </p>
      {issued.note ? <p class="problem">{issued.note}</p> : null}
      <div class="row">
        <label for="secret">Secret</label>
        <input id="secret" class="mono" readOnly value={issued.secret} size={56} spellcheck={false} autocomplete="off"
          onFocus={(e) => (e.target as HTMLInputElement).select()} data-testid="secret" />
        <button type="button" onClick={copy}>Copy</button>
        <button type="button" onClick={onDone}>I have saved it</button>
      </div>
      <p class="small" aria-live="polite">{copied}</p>
    </div>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: Issued) => void }) {
  const [name, setName] = useState("");
  const [role, setRole] = useState<string>("VIEWER");
  const [sessions, setSessions] = useState("");
  const [queues, setQueues] = useState("");
  const [when, setWhen] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const k = await ok(api.POST("/api/keys", {
        body: { name: name.trim(), role, sessions: list(sessions), queues: role === "WORKER" ? list(queues) : undefined, ...expiry(when) },
      }));
      setName("");
      setSessions("");
      setQueues("");
      setWhen("");
      onCreated(k);
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  const val = (f: (v: string) => void) => (e: Event) => f((e.target as HTMLInputElement).value);
  return (
    <form class="panel create" onSubmit={submit} aria-labelledby="create-h" data-testid="create-key">
      <h2 id="create-h">Create a key</h2>
      <div class="fields">
        <div>
          <label for="k-name">Name</label>
          <input id="k-name" required value={name} onInput={val(setName)} autocomplete="off" aria-describedby="k-name-h" />
          <p id="k-name-h" class="muted small">Letters, digits, . _ -; recorded as key:&lt;name&gt;.</p>
        </div>
        <div>
          <label for="k-role">Role</label>
          <select id="k-role" value={role} onChange={val(setRole)}>
            {roles.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </div>
        <div>
          <label for="k-sessions">Sessions</label>
          <input id="k-sessions" value={sessions} onInput={val(setSessions)} placeholder="every session" aria-describedby="k-sessions-h" />
          <p id="k-sessions-h" class="muted small">Comma-separated; empty: every session.</p>
        </div>
        {role === "WORKER" ? (
          <div>
            <label for="k-queues">Queues</label>
            <input id="k-queues" value={queues} onInput={val(setQueues)} placeholder="every queue" aria-describedby="k-queues-h" />
            <p id="k-queues-h" class="muted small">Comma-separated worker queues; empty: every queue.</p>
          </div>
        ) : null}
        <div>
          <label for="k-expires">Expires</label>
          <input id="k-expires" value={when} onInput={val(setWhen)} placeholder="never" aria-describedby="k-expires-h" />
          <p id="k-expires-h" class="muted small">A duration from now (720h, 90m) or an RFC 3339 time; at most 2 years.</p>
        </div>
      </div>
      <button type="submit" class="primary" disabled={busy || !name.trim()} data-testid="create">Create key</button>
      <div aria-live="polite">
        <ProblemView error={error} />
      </div>
    </form>
  );
}

interface RowProps {
  onRotated: (k: Issued) => void;
  onChanged: () => void;
  onRevoked: (name: string) => void;
}

function KeyTable({ items, ...on }: { items: Key[] } & RowProps) {
  return (
    <div class="table-wrap">
      <table data-testid="keys">
        <thead>
          <tr>
            <th>Name</th><th>Role</th><th>Sessions</th><th>Queues</th><th>Source</th><th>Hint</th><th>Created</th><th>Expires</th>
            <th>Last used</th><th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {items.map((k) => (
            <tr key={k.source + ":" + k.name} data-key={k.name} data-source={k.source}>
              <td data-label="Name"><strong>{k.name}</strong></td>
              <td data-label="Role"><span class="badge">{k.role}</span></td>
              <td data-label="Sessions">{k.sessions ? k.sessions.join(", ") : <span class="muted">all</span>}</td>
              <td data-label="Queues">{k.role !== "WORKER" ? <span class="muted">—</span> : k.queues ? k.queues.join(", ") : <span class="muted">all</span>}</td>
              <td data-label="Source"><code>{k.source}</code></td>
              <td data-label="Hint">{k.hint ? <code>{k.hint}…</code> : <span class="muted">—</span>}</td>
              <td data-label="Created">
                {k.createdAt ? <><Time at={k.createdAt} /><br /><span class="muted small">by {k.createdBy} via {k.createdVia}</span></> : <span class="muted">at start</span>}
                {k.rotatedAt ? <><br /><span class="muted small">rotated <Time at={k.rotatedAt} /> by {k.rotatedBy}</span></> : null}
              </td>
              <td data-label="Expires" data-testid="expires">
                {k.expiresAt ? <Time at={k.expiresAt} /> : <span class="muted">never</span>}
                {k.expired ? <> <span class="badge s-failed">expired</span></> : null}
              </td>
              <td data-label="Last used" data-testid="last-used">
                {k.lastUsedAt ? <><Time at={k.lastUsedAt} /><br /><span class="muted small">from {k.lastUsedFrom}</span></> : <span class="muted">{k.source === "api" ? "never" : "not recorded"}</span>}
              </td>
              <td data-label="Actions">{k.source === "api" ? <KeyActions k={k} {...on} /> : <span class="muted small">configured in {k.source}</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function KeyActions({ k, onRotated, onChanged, onRevoked }: { k: Key } & RowProps) {
  const [when, setWhen] = useState("");
  const id = "exp-" + k.name;
  const name = { params: { path: { name: k.name } } };
  return (
    <div class="key-actions">
      <Action label="Rotate" role="ADMIN" testid={"rotate-" + k.name} disabled={k.expired}
        title={k.expired ? "An expired key is not rotated: revoke it and create it again" : undefined}
        confirm={`Rotate ${k.name}? Its current secret stops working at once; the new one is shown once.`}
        run={async () => {
          const r = await ok(api.POST("/api/keys/{name}/rotate", name));
          onRotated(r);
          return `rotated by ${r.rotatedBy}`;
        }} />
      <span class="row expiry">
        <label for={id} class="sr-only">New expiry of {k.name}</label>
        <input id={id} size={12} value={when} placeholder="10m or a time" onInput={(e) => setWhen((e.target as HTMLInputElement).value)}
          data-testid={"expiry-" + k.name} />
        <Action label="Set expiry" role="ADMIN" testid={"expire-" + k.name} disabled={!when.trim()}
          run={async () => {
            const r = await ok(api.PATCH("/api/keys/{name}", { ...name, body: expiry(when) }));
            setWhen("");
            onChanged();
            return `expires ${r.expiresAt ? new Date(r.expiresAt).toLocaleString() : "never"}, set by ${me()}`;
          }} />
      </span>
      <Action label="Revoke" role="ADMIN" kind="danger" testid={"revoke-" + k.name}
        confirm={`Revoke ${k.name}? Its secret stops working at once, on every instance.`}
        run={async () => {
          await ok(api.DELETE("/api/keys/{name}", name));
          onRevoked(k.name);
          return `revoked by ${me()}`;
        }} />
    </div>
  );
}

export const keys: Page = { path: "/keys", title: "API keys", nav: "Keys", role: "ADMIN", component: Keys };
