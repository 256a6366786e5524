// What the signed-in user may do, from `api/meta`: set once before the first render.

import type { Feature, Meta } from "./api";

export const session = {
  meta: undefined as unknown as Meta, // set by main.tsx before anything renders
  /** Destructive and mutating controls are shown only when this is true. */
  canAct: false,
};

export function setSession(meta: Meta): void {
  session.meta = meta;
  session.canAct = !meta.read_only && meta.can_change;
}

/** Whether this version of the server offers a feature (profiles: not yet). */
export const hasFeature = (feature: Feature): boolean => session.meta.features[feature];
