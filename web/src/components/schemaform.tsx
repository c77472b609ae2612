// A form drawn from a JSON Schema (the schema an INPUT_REQUEST node asks
// its answer to satisfy), with no code compiled at run time: the page's
// Content-Security-Policy forbids eval, so validators that generate code
// (ajv) are out. What it draws: an object's properties as labelled fields
// (required ones marked), strings (enum → select; format date-time, date,
// email, uri → the matching input), numbers and integers (minimum,
// maximum), booleans (checkbox), arrays of those (a row per item, add and
// remove) and nested objects (a fieldset). Any other part of a schema
// (oneOf, $ref, a type list, an array of objects…) gets a JSON editor of
// its own, so nothing the schema allows is out of reach. checkValue checks
// the basic constraints in the browser before anything is sent; the server
// checks the whole schema again.
import "./schemaform.css";
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { parseJson } from "./json";

export type Schema = Record<string, unknown>;

/** Unparsed stands for text a field could not turn into a value (a JSON editor's bad JSON). */
export class Unparsed {
  constructor(
    readonly text: string,
    readonly error: string,
  ) {}
}

export interface FieldError {
  /** path names the value: "count", "address.city", "tags[2]" ("" is the whole value). */
  path: string;
  message: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const simple = new Set(["string", "number", "integer", "boolean"]);
const join = (base: string, key: string) => (base ? `${base}.${key}` : key);

/** drawable reports whether the form draws s itself (else it gets a JSON editor). */
export function drawable(s: Schema): boolean {
  if ("oneOf" in s || "anyOf" in s || "allOf" in s || "$ref" in s || "not" in s || "if" in s) return false;
  const t = s.type;
  if (t === "object") return isObj(s.properties) && Object.values(s.properties).every((p) => isObj(p));
  if (t === "array") return isObj(s.items) && simple.has(s.items.type as string) && drawable(s.items);
  if (typeof t === "string" && simple.has(t)) return true;
  return Array.isArray(s.enum) && s.enum.every((x) => typeof x === "string");
}

/** initialValue is what a new form starts with: the defaults, false for booleans. */
export function initialValue(s: Schema): unknown {
  if ("default" in s) return structuredClone(s.default);
  if (!drawable(s)) return undefined;
  if (s.type === "boolean") return false;
  if (s.type === "object") {
    // An optional nested object starts absent (its own required members
    // would otherwise be asked for); typing into one of its fields makes it.
    const req = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const out: Record<string, unknown> = {};
    for (const [k, p] of Object.entries(s.properties as Record<string, Schema>)) {
      const v = initialValue(p);
      if (v !== undefined && (req.has(k) || p.type !== "object" || "default" in p)) out[k] = v;
    }
    return out;
  }
  if (s.type === "array") return [];
  return undefined;
}

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

function typeMatches(t: unknown, v: unknown): boolean {
  if (Array.isArray(t)) return t.some((x) => typeMatches(x, v));
  switch (t) {
    case "string": return typeof v === "string";
    case "number": return typeof v === "number" && isFinite(v);
    case "integer": return typeof v === "number" && Number.isInteger(v);
    case "boolean": return typeof v === "boolean";
    case "object": return isObj(v);
    case "array": return Array.isArray(v);
    case "null": return v === null;
    default: return true;
  }
}

const emailRe = /^[^\s@]+@[^\s@]+$/;
const dateRe = /^\d{4}-\d{2}-\d{2}$/;
const dateTimeRe = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** checkValue lists how v breaks the basic constraints of s (an empty list: none found). */
export function checkValue(s: Schema, v: unknown, path = ""): FieldError[] {
  const errs: FieldError[] = [];
  const add = (message: string, p = path) => errs.push({ path: p, message });
  if (v instanceof Unparsed) {
    add("is not JSON: " + v.error);
    return errs;
  }
  if (v === undefined) return errs;
  if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(v)) add(`must be ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((x) => JSON.stringify(x) === JSON.stringify(v))) {
    add("must be one of " + s.enum.map((x) => JSON.stringify(x)).join(", "));
  }
  if (s.type !== undefined && !typeMatches(s.type, v)) {
    add(`must be ${Array.isArray(s.type) ? s.type.join(" or ") : s.type === "integer" ? "a whole number" : "a " + s.type}, got ${typeOf(v)}`);
    return errs;
  }
  if (typeof v === "string") {
    if (typeof s.minLength === "number" && [...v].length < s.minLength) add(`must be at least ${s.minLength} characters`);
    if (typeof s.maxLength === "number" && [...v].length > s.maxLength) add(`must be at most ${s.maxLength} characters`);
    if (typeof s.pattern === "string") {
      try {
        if (!new RegExp(s.pattern, "u").test(v)) add(`must match the pattern ${s.pattern}`);
      } catch {
        /* a pattern JavaScript cannot read: the server checks it */
      }
    }
    if (s.format === "date-time" && !dateTimeRe.test(v)) add("must be a date and time (RFC 3339)");
    if (s.format === "date" && !dateRe.test(v)) add("must be a date (YYYY-MM-DD)");
    if (s.format === "email" && !emailRe.test(v)) add("must be an email address");
    if (s.format === "uri") {
      try {
        new URL(v);
      } catch {
        add("must be an absolute URI");
      }
    }
  }
  if (typeof v === "number") {
    if (typeof s.minimum === "number" && v < s.minimum) add(`must be at least ${s.minimum}`);
    if (typeof s.maximum === "number" && v > s.maximum) add(`must be at most ${s.maximum}`);
    if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) add(`must be more than ${s.exclusiveMinimum}`);
    if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) add(`must be less than ${s.exclusiveMaximum}`);
    if (typeof s.multipleOf === "number" && s.multipleOf > 0 && Math.abs(v / s.multipleOf - Math.round(v / s.multipleOf)) > 1e-9) {
      add(`must be a multiple of ${s.multipleOf}`);
    }
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === "number" && v.length < s.minItems) add(`must have at least ${s.minItems} items`);
    if (typeof s.maxItems === "number" && v.length > s.maxItems) add(`must have at most ${s.maxItems} items`);
    if (s.uniqueItems === true && new Set(v.map((x) => JSON.stringify(x))).size !== v.length) add("must not repeat an item");
    if (isObj(s.items)) v.forEach((x, i) => errs.push(...checkValue(s.items as Schema, x, `${path}[${i}]`)));
  }
  if (isObj(v)) {
    const props = isObj(s.properties) ? (s.properties as Record<string, Schema>) : {};
    for (const k of Array.isArray(s.required) ? (s.required as string[]) : []) {
      if (v[k] === undefined) add("is required", join(path, k));
    }
    for (const [k, x] of Object.entries(v)) {
      if (isObj(props[k])) errs.push(...checkValue(props[k], x, join(path, k)));
      else if (s.additionalProperties === false) add("is not allowed here", join(path, k));
      else if (isObj(s.additionalProperties)) errs.push(...checkValue(s.additionalProperties as Schema, x, join(path, k)));
    }
  }
  return errs;
}

/** hasUnparsed reports whether v holds text a JSON editor could not read. */
export function hasUnparsed(v: unknown): boolean {
  if (v instanceof Unparsed) return true;
  if (Array.isArray(v)) return v.some(hasUnparsed);
  if (isObj(v)) return Object.values(v).some(hasUnparsed);
  return false;
}

interface FieldProps {
  schema: Schema;
  value: unknown;
  onChange: (v: unknown) => void;
  /** id is the DOM id of the field's control; path names it in errors. */
  id: string;
  path: string;
  label: string;
  required: boolean;
  errors: FieldError[];
}

/** SchemaForm draws the form for schema; value is the answer being built. */
export function SchemaForm(p: { schema: Schema; value: unknown; onChange: (v: unknown) => void; id: string; errors?: FieldError[]; label?: string }) {
  return (
    <div class="schemaform">
      <Field schema={p.schema} value={p.value} onChange={p.onChange} id={p.id} path="" label={p.label ?? "Answer"} required errors={p.errors ?? []} />
    </div>
  );
}

function describe(s: Schema): string {
  const bits: string[] = [];
  if (typeof s.description === "string") bits.push(s.description);
  if (typeof s.minimum === "number") bits.push(`at least ${s.minimum}`);
  if (typeof s.exclusiveMinimum === "number") bits.push(`more than ${s.exclusiveMinimum}`);
  if (typeof s.maximum === "number") bits.push(`at most ${s.maximum}`);
  if (typeof s.exclusiveMaximum === "number") bits.push(`less than ${s.exclusiveMaximum}`);
  if (typeof s.minLength === "number") bits.push(`${s.minLength}+ characters`);
  if (typeof s.maxLength === "number") bits.push(`up to ${s.maxLength} characters`);
  if (typeof s.pattern === "string") bits.push(`pattern ${s.pattern}`);
  return bits.join(" · ");
}

function Errors({ id, path, errors }: { id: string; path: string; errors: FieldError[] }) {
  const mine = errors.filter((e) => e.path === path);
  if (!mine.length) return null;
  return (
    <p id={id + "-error"} class="field-error" data-field-error={path}>
      {mine.map((e) => e.message).join("; ")}
    </p>
  );
}

function Field(p: FieldProps) {
  const s = p.schema;
  const title = typeof s.title === "string" ? s.title : p.label;
  const hint = describe(s);
  const invalid = p.errors.some((e) => e.path === p.path);
  const described = [hint ? p.id + "-hint" : "", invalid ? p.id + "-error" : ""].filter(Boolean).join(" ") || undefined;
  const mark = p.required ? <span class="req" aria-hidden="true"> *</span> : null;
  const hintEl = hint ? <span id={p.id + "-hint"} class="muted small hint">{hint}</span> : null;

  if (!drawable(s)) {
    return <JsonPart {...p} title={title} mark={mark} />;
  }
  if (s.type === "object") {
    const props = s.properties as Record<string, Schema>;
    const req = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const obj = isObj(p.value) ? p.value : {};
    const fields = Object.entries(props).map(([k, ps]) => (
      <Field key={k} schema={ps} value={obj[k]} id={`${p.id}-${k.replace(/[^A-Za-z0-9_-]/g, "_")}`} path={join(p.path, k)} label={k}
        required={req.has(k)} errors={p.errors}
        onChange={(v) => {
          const next = { ...obj };
          if (v === undefined) delete next[k];
          else next[k] = v;
          p.onChange(next);
        }} />
    ));
    if (p.path === "") {
      return (
        <div class="sf-object" role="group" aria-label={title}>
          {hintEl}
          {fields}
          <Errors id={p.id} path={p.path} errors={p.errors} />
        </div>
      );
    }
    return (
      <fieldset class="sf-object">
        <legend>{title}{mark}</legend>
        {hintEl}
        {fields}
        <Errors id={p.id} path={p.path} errors={p.errors} />
      </fieldset>
    );
  }
  if (s.type === "array") {
    const items = Array.isArray(p.value) ? p.value : [];
    const is = s.items as Schema;
    return (
      <fieldset class="sf-array">
        <legend>{title}{mark}</legend>
        {hintEl}
        {items.map((x, i) => (
          <div class="row sf-item" key={i}>
            <Field schema={is} value={x} id={`${p.id}-${i}`} path={`${p.path}[${i}]`} label={`${title} ${i + 1}`} required errors={p.errors}
              onChange={(v) => p.onChange(items.map((y, j) => (j === i ? v : y)))} />
            <button type="button" onClick={() => p.onChange(items.filter((_, j) => j !== i))} aria-label={`Remove ${title} ${i + 1}`}>Remove</button>
          </div>
        ))}
        <button type="button" onClick={() => p.onChange([...items, initialValue(is) ?? (is.type === "string" ? "" : undefined)])}>
          Add {title}
        </button>
        <Errors id={p.id} path={p.path} errors={p.errors} />
      </fieldset>
    );
  }
  if (s.type === "boolean") {
    return (
      <div class="sf-field sf-bool">
        <input type="checkbox" id={p.id} checked={p.value === true} aria-describedby={described} aria-invalid={invalid || undefined}
          onChange={(e) => p.onChange((e.target as HTMLInputElement).checked)} />
        <label for={p.id}>{title}{mark}</label>
        {hintEl}
        <Errors id={p.id} path={p.path} errors={p.errors} />
      </div>
    );
  }
  const label = <label for={p.id}>{title}{mark}</label>;
  if (Array.isArray(s.enum)) {
    const opts = s.enum as unknown[];
    const at = opts.findIndex((o) => JSON.stringify(o) === JSON.stringify(p.value));
    return (
      <div class="sf-field">
        {label}
        <select id={p.id} value={at < 0 ? "" : String(at)} aria-describedby={described} aria-invalid={invalid || undefined} aria-required={p.required}
          onChange={(e) => {
            const i = (e.target as HTMLSelectElement).value;
            p.onChange(i === "" ? undefined : opts[Number(i)]);
          }}>
          <option value="">— choose —</option>
          {opts.map((o, i) => (
            <option key={i} value={String(i)}>{typeof o === "string" ? o : JSON.stringify(o)}</option>
          ))}
        </select>
        {hintEl}
        <Errors id={p.id} path={p.path} errors={p.errors} />
      </div>
    );
  }
  if (s.type === "number" || s.type === "integer") {
    return <NumberField {...p} label={title} labelEl={label} hintEl={hintEl} described={described} invalid={invalid} />;
  }
  // A string.
  const str = typeof p.value === "string" ? p.value : "";
  const set = (v: string) => p.onChange(v === "" && !p.required ? undefined : v);
  if (s.format === "date-time") {
    return <DateTimeField {...p} labelEl={label} hintEl={hintEl} described={described} invalid={invalid} />;
  }
  const type = s.format === "date" ? "date" : s.format === "email" ? "email" : s.format === "uri" ? "url" : "text";
  const long = typeof s.maxLength === "number" && s.maxLength > 200;
  return (
    <div class="sf-field">
      {label}
      {long && type === "text" && s.format === undefined && typeof s.pattern !== "string" ? (
        <textarea id={p.id} class="sf-text" rows={2} value={str} aria-describedby={described} aria-invalid={invalid || undefined} aria-required={p.required}
          onInput={(e) => set((e.target as HTMLTextAreaElement).value)} />
      ) : (
        <input id={p.id} type={type} value={str} aria-describedby={described} aria-invalid={invalid || undefined} aria-required={p.required}
          onInput={(e) => set((e.target as HTMLInputElement).value)} />
      )}
      {hintEl}
      <Errors id={p.id} path={p.path} errors={p.errors} />
    </div>
  );
}

type Drawn = FieldProps & { labelEl: JSX.Element; hintEl: JSX.Element | null; described?: string; invalid: boolean };

function NumberField(p: Drawn) {
  // The text is kept as typed ("1.", "-"): a number only once it reads as one.
  const [text, setText] = useState(typeof p.value === "number" ? String(p.value) : typeof p.value === "string" ? p.value : "");
  const s = p.schema;
  return (
    <div class="sf-field">
      {p.labelEl}
      <input id={p.id} type="number" inputMode={s.type === "integer" ? "numeric" : "decimal"} value={text}
        min={typeof s.minimum === "number" ? s.minimum : undefined} max={typeof s.maximum === "number" ? s.maximum : undefined}
        step={s.type === "integer" ? 1 : "any"} aria-describedby={p.described} aria-invalid={p.invalid || undefined} aria-required={p.required}
        onInput={(e) => {
          const t = (e.target as HTMLInputElement).value;
          setText(t);
          if (t.trim() === "") p.onChange(undefined);
          else {
            const n = Number(t);
            p.onChange(isFinite(n) ? n : t);
          }
        }} />
      {p.hintEl}
      <Errors id={p.id} path={p.path} errors={p.errors} />
    </div>
  );
}

/** A date-time is entered in the browser's local time and sent as RFC 3339 UTC. */
function DateTimeField(p: Drawn) {
  const local = (iso: unknown) => {
    if (typeof iso !== "string" || isNaN(Date.parse(iso))) return "";
    const d = new Date(iso);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  };
  return (
    <div class="sf-field">
      {p.labelEl}
      <input id={p.id} type="datetime-local" value={local(p.value)} aria-describedby={p.described} aria-invalid={p.invalid || undefined} aria-required={p.required}
        onInput={(e) => {
          const t = (e.target as HTMLInputElement).value;
          p.onChange(t === "" ? undefined : new Date(t).toISOString());
        }} />
      <span class="muted small">your local time, sent as UTC</span>
      {p.hintEl}
      <Errors id={p.id} path={p.path} errors={p.errors} />
    </div>
  );
}

/** JsonPart edits a part of the schema the form cannot draw, as JSON. */
function JsonPart(p: FieldProps & { title: string; mark: JSX.Element | null }) {
  const [text, setText] = useState(p.value === undefined ? "" : JSON.stringify(p.value, null, 2));
  const invalid = p.errors.some((e) => e.path === p.path);
  return (
    <div class="sf-field sf-json">
      <label for={p.id}>{p.title}{p.mark} <span class="muted small">(JSON)</span></label>
      <textarea id={p.id} rows={4} spellcheck={false} value={text} aria-invalid={invalid || undefined}
        aria-describedby={[p.id + "-schema", invalid ? p.id + "-error" : ""].filter(Boolean).join(" ")}
        onInput={(e) => {
          const t = (e.target as HTMLTextAreaElement).value;
          setText(t);
          const r = parseJson(t);
          p.onChange(r.error ? new Unparsed(t, r.error) : r.value);
        }} />
      <details>
        <summary>The schema of this part</summary>
        <pre id={p.id + "-schema"} class="small">{JSON.stringify(p.schema, null, 2)}</pre>
      </details>
      <Errors id={p.id} path={p.path} errors={p.errors} />
    </div>
  );
}
