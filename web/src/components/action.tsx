// A control: a button offered only to a role that may use it, which sends
// one request and shows the server's answer (or its problem) beside it, in
// a live region so a screen reader hears it too. The server checks the
// role again; hiding the button is only so nobody is offered what would
// be refused.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { can, type Role } from "../app/auth";
import { ProblemView } from "./load";

export interface ActionProps {
  label: ComponentChildren;
  /** role is the least role the server accepts for the request. */
  role: Role;
  /** run sends the request; its string is shown as the server's answer. */
  run: () => Promise<string | void>;
  /** confirm asks before sending (for a stop, a kill, a revoke). */
  confirm?: string;
  kind?: "primary" | "danger";
  disabled?: boolean;
  title?: string;
  /** testid names the button for the browser tests. */
  testid?: string;
}

export function Action(p: ActionProps) {
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<string>();
  const [error, setError] = useState<Error>();
  if (!can(p.role)) return null;
  const click = async () => {
    if (p.confirm && !window.confirm(p.confirm)) return;
    setBusy(true);
    setAnswer(undefined);
    setError(undefined);
    try {
      const a = await p.run();
      setAnswer(a || "done");
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={p.kind} disabled={busy || p.disabled} title={p.title} onClick={click} data-testid={p.testid}>
        {p.label}
      </button>
      <span aria-live="polite">
        {answer ? <span class="answer small" data-testid={p.testid ? p.testid + "-answer" : undefined}>{answer}</span> : null}
        <ProblemView error={error} />
      </span>
    </span>
  );
}
