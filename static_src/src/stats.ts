// The cluster numbers shown on every page (`api/stats`), polled once per tick for the
// whole app. Each poll also appends the *differences* in processed/failed since the
// previous poll to the realtime series the Overview draws.

import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Stats } from "./api";
import { usePoll } from "./poll";

const REALTIME_POINTS = 60;
export const realtime = { t: [] as number[], processed: [] as number[], failed: [] as number[] };

let stats: Stats | undefined;
let error: ApiError | undefined;
let previous: { processed: number; failed: number } | undefined;
const listeners = new Set<() => void>();

function record(next: Stats): void {
  // An unreadable counter (its key holds the wrong type) gives no difference to draw.
  if (next.processed === null || next.failed === null) {
    previous = undefined;
    return;
  }
  if (previous) {
    realtime.t.push(Date.now() / 1000);
    realtime.processed.push(Math.max(0, next.processed - previous.processed));
    realtime.failed.push(Math.max(0, next.failed - previous.failed));
    if (realtime.t.length > REALTIME_POINTS) {
      realtime.t.shift();
      realtime.processed.shift();
      realtime.failed.shift();
    }
  }
  previous = { processed: next.processed, failed: next.failed };
}

let inFlight = false;
async function load(): Promise<void> {
  if (inFlight) return;
  inFlight = true;
  try {
    stats = await api.stats();
    error = undefined;
    record(stats);
  } catch (e) {
    error = e as ApiError;
  } finally {
    inFlight = false;
    listeners.forEach((fn) => fn());
  }
}

/** Poll the stats (mount once, in the layout). */
export function useStatsPolling(): void {
  const { tick } = usePoll();
  useEffect(() => void load(), [tick]);
}

export function useStats(): { stats?: Stats; error?: ApiError } {
  const [, setState] = useState(0);
  useEffect(() => {
    const update = () => setState((n) => n + 1);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return { stats, error };
}

/** Ask for fresh numbers now (after an action changed them). */
export const refreshStats = (): Promise<void> => load();
