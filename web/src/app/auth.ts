// Who is signed in. The key the user pastes is kept in sessionStorage: it
// lives as long as the tab (a reload keeps it, a new tab or a closed
// browser does not) and never goes into a URL or localStorage. What the
// key may do comes from GET /api/self, so the console offers only the
// controls the server would accept; the server still checks every request.
import { store } from "./store";
import type { components } from "../api/schema";

export type Self = components["schemas"]["Self"];
export type Role = "VIEWER" | "OPERATOR" | "ADMIN";

const keySlot = "yukta.key";

export const signedIn = store<Self | null>(null);

/** signedOutWhy is the server's words when it refused the tab's key (401). */
export const signedOutWhy = store<string | null>(null);

export function key(): string | null {
  return sessionStorage.getItem(keySlot);
}

export function rememberKey(k: string) {
  sessionStorage.setItem(keySlot, k);
}

/** signOut forgets the key; why (the server's words on a 401) is shown on the sign-in. */
export function signOut(why: string | null = null) {
  sessionStorage.removeItem(keySlot);
  signedOutWhy.set(why);
  signedIn.set(null);
}

const rank: Record<string, number> = { VIEWER: 1, OPERATOR: 2, ADMIN: 3 };

/** can reports whether the signed-in key has at least role min. */
export function can(min: Role, self: Self | null = signedIn.get()): boolean {
  if (!self) return false;
  return (rank[self.role] ?? 0) >= rank[min]!;
}
