// Running a mutation from a button: confirm when asked, toast the outcome, refresh.

import { ApiError, type MutationResult } from "./api";
import { ask } from "./components/Confirm";
import { toast } from "./components/Toasts";
import { refreshNow } from "./poll";
import { refreshStats } from "./stats";

export interface RunOptions {
  confirm?: { title: string; body: string; confirm: string; danger?: boolean };
  done?: (result: MutationResult) => string;
}

/** Run `action`; returns its result, or undefined if cancelled or failed (already toasted). */
export async function run(action: () => Promise<MutationResult>, options: RunOptions = {}) {
  if (options.confirm && !(await ask(options.confirm))) return undefined;
  try {
    const result = await action();
    if (options.done) toast(options.done(result));
    return result;
  } catch (e) {
    const error = e as ApiError;
    toast(error.status === 409 && error.body?.total !== undefined
      ? `${error.detail || "The data changed"} (now ${error.body.total}). Reload and try again.`
      : error.detail || error.message, "error");
    return undefined;
  } finally {
    refreshNow();
    void refreshStats();
  }
}

/** "3 jobs", "1 job". */
export const plural = (n: number | undefined, word: string, many = word + "s"): string =>
  `${(n ?? 0).toLocaleString("en-US")} ${n === 1 ? word : many}`;

/** A toast line from the counts a mutation returned. */
export function describe(result: MutationResult, verb: string): string {
  const parts = [`${verb} ${plural(result.done ?? result.requested ?? 0, "job")}`];
  if (result.missing) parts.push(`${result.missing} had already gone`);
  return parts.join("; ") + ".";
}
