// What the signed-in user may do, from `api/meta`: set once before the first render.

import type { Meta } from "./api";

export const session = {
  meta: { read_only: false, can_change: false } as Meta,
  /** Destructive and mutating controls are shown only when this is true (§2.5). */
  canAct: false,
};

export function setSession(meta: Meta): void {
  session.meta = meta;
  session.canAct = !meta.read_only && meta.can_change !== false;
}

export function userName(meta: Meta): string {
  const user = meta.user;
  if (!user) return "";
  return typeof user === "string" ? user : user.username || user.name || "";
}
