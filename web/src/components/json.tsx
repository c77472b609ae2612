// JSON on a page: shown pretty-printed (secrets arrive masked by the
// server), and edited in a textarea that says where the text stops being
// JSON before anything is sent.
import { useState } from "preact/hooks";

export function JsonView({ value, label }: { value: unknown; label?: string }) {
  return (
    <pre class="json" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

/** parseJson returns the value of text, or the parser's complaint. */
export function parseJson(text: string): { value?: unknown; error?: string } {
  if (text.trim() === "") return { value: undefined };
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

export function JsonEditor(p: { id: string; label: string; value: string; onChange: (text: string) => void; rows?: number; hint?: string }) {
  const [touched, setTouched] = useState(false);
  const { error } = parseJson(p.value);
  const errId = p.id + "-error";
  return (
    <div class="json-editor">
      <label for={p.id}>{p.label}</label>
      <textarea id={p.id} rows={p.rows ?? 8} spellcheck={false} value={p.value} aria-invalid={!!error}
        aria-describedby={error ? errId : undefined}
        onInput={(e) => {
          setTouched(true);
          p.onChange((e.target as HTMLTextAreaElement).value);
        }} />
      {p.hint ? <p class="muted small">{p.hint}</p> : null}
      {error && touched ? (
        <p id={errId} class="field-error" role="alert">
          Not JSON: {error}
        </p>
      ) : null}
    </div>
  );
}
