// Running a mutation from a button: confirm when asked, toast the outcome, refresh.

import { ApiError, type MutationResult } from "./api";
import { ask } from "./components/Confirm";
import { toast } from "./components/Toasts";
import { refreshNow } from "./poll";
import { refreshStats } from "./stats";

export interface RunOptions<R> {
  confirm?: { title: string; body: string; confirm: string; danger?: boolean };
  done?: (result: R) => string;
}

/** Run `action`; returns its result, or undefined if cancelled or failed (already toasted). */
export async function run<R extends MutationResult>(action: () => Promise<R>, options: RunOptions<R> = {}) {
  if (options.confirm && !(await ask(options.confirm))) return undefined;
  try {
    const result = await action();
    if (options.done) toast(options.done(result));
    return result;
  } catch (e) {
    const error = e as ApiError;
    toast(error.problem?.total !== undefined
      ? `${error.detail} (now ${error.problem.total}). Reload and try again.`
      : error.message, "error");
    return undefined;
  } finally {
    refreshNow();
    void refreshStats();
  }
}

/** "3 jobs", "1 job". */
export const plural = (n: number, word: string, many = word + "s"): string =>
  `${n.toLocaleString("en-US")} ${n === 1 ? word : many}`;

/** A toast line from the counts a mutation returned. */
export function describe(result: MutationResult, verb: string): string {
  const parts = [`${verb} ${plural(result.done, "job")}`];
  if (result.missing) parts.push(`${result.missing} had already gone`);
  return parts.join("; ") + ".";
}
