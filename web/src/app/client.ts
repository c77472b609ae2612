// The console's only way to the server: a client typed from
// api/openapi.yaml (src/api/schema.d.ts, `npm run generate`), sending the
// tab's key. Errors come back as the server's RFC 9457 problem, shown as
// the server wrote it.
import createClient from "openapi-fetch";
import type { components, paths } from "../api/schema";
import { key, signOut, signedIn } from "./auth";

export type Problem = components["schemas"]["Problem"];
export type Schemas = components["schemas"];

export const api = createClient<paths>({ baseUrl: "" });

api.use({
  onRequest({ request }) {
    const k = key();
    if (k) request.headers.set("Authorization", "Bearer " + k);
    return request;
  },
  // Any 401 while signed in means the server no longer takes the tab's key
  // (revoked, rotated, expired): the tab signs out and says why.
  async onResponse({ response }) {
    if (response.status === 401 && signedIn.get() && key()) {
      let why = "the server no longer accepts this key";
      try {
        const p = (await response.clone().json()) as Problem;
        why = p.detail || p.title || why;
      } catch {
        // not a problem document: keep the plain words
      }
      signOut(why);
    }
    return response;
  },
});

/** ApiError carries the problem the server answered with. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
  ) {
    super(problem?.detail || problem?.title || `the server answered ${status}`);
  }
}

/** ok returns a call's data or throws its problem as an ApiError. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) {
    throw new ApiError(response.status, (error as Problem | undefined) ?? undefined);
  }
  return data as T;
}

/** authHeaders are the headers a raw fetch (a stream, an export) sends. */
export function authHeaders(): Record<string, string> {
  const k = key();
  return k ? { Authorization: "Bearer " + k } : {};
}
