// The payload of a run to start: a JSON editor that checks the syntax in
// the browser and, when the workflow declares an input schema (issue 25),
// the value against it, before anything is sent. The check is a small
// interpreter of the JSON Schema keywords an input uses, never code made
// at run time (the console's policy forbids eval). The server checks
// again; its 400 names the place (body.payload.…), shown under the editor.
import { JsonEditor, parseJson } from "./json";

export type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
};

/** schemaErrors lists where value breaks schema, as "payload.a.b: why". */
export function schemaErrors(value: unknown, schema: Schema, at = "payload"): string[] {
  const out: string[] = [];
  const kind = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  const types = schema.type === undefined ? undefined : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types && !types.some((t) => t === kind || (t === "integer" && typeof value === "number" && Number.isInteger(value)))) {
    return [`${at}: must be ${types.join(" or ")}, not ${kind}`];
  }
  if (schema.enum && !schema.enum.some((x) => JSON.stringify(x) === JSON.stringify(value))) out.push(`${at}: must be one of ${schema.enum.map((x) => JSON.stringify(x)).join(", ")}`);
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${at}: must be ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${at}: must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${at}: must be at most ${schema.maximum}`);
  }
  if (typeof value === "string") {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) out.push(`${at}: must be at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && n > schema.maxLength) out.push(`${at}: must be at most ${schema.maxLength} characters`);
    if (schema.pattern !== undefined) {
      try {
        if (!new RegExp(schema.pattern, "u").test(value)) out.push(`${at}: must match ${schema.pattern}`);
      } catch {
        /* a pattern the browser cannot read: the server decides */
      }
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) out.push(`${at}: must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) out.push(`${at}: must have at most ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => out.push(...schemaErrors(v, schema.items!, `${at}[${i}]`)));
  }
  if (kind === "object") {
    const obj = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in obj)) out.push(`${at}.${r}: is required`);
    for (const [k, v] of Object.entries(obj)) {
      const p = schema.properties?.[k];
      if (p) out.push(...schemaErrors(v, p, `${at}.${k}`));
      else if (schema.additionalProperties === false) out.push(`${at}.${k}: is not a field of this input`);
      else if (typeof schema.additionalProperties === "object") out.push(...schemaErrors(v, schema.additionalProperties, `${at}.${k}`));
    }
  }
  return out;
}

/** checkPayload returns the value to send, or what is wrong with the text. */
export function checkPayload(text: string, schema?: Schema): { value?: unknown; errors: string[] } {
  const { value, error } = parseJson(text);
  if (error) return { errors: [`payload: not JSON: ${error}`] };
  if (schema && value !== undefined) return { value, errors: schemaErrors(value, schema) };
  return { value, errors: [] };
}

export function PayloadEditor(p: { id: string; label: string; value: string; onChange: (t: string) => void; schema?: Schema }) {
  const hint = p.schema
    ? "JSON, checked against the workflow's input schema before it is sent."
    : "Any JSON value (usually an object); empty sends no payload. The workflow declares no input schema, so only the syntax is checked here.";
  return <JsonEditor id={p.id} label={p.label} value={p.value} onChange={p.onChange} rows={6} hint={hint} />;
}
