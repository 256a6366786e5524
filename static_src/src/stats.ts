// The cluster numbers shown on every page (`api/stats`), polled once per tick for the
// whole app. Each poll also appends the *differences* in processed/failed since the
// previous poll to the realtime series the Overview draws (dashboard.md §1.1).

import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Json } from "./api";
import { usePoll } from "./poll";

export interface Stats extends Json {
  processed: number;
  failed: number;
  busy: number;
  processes: number;
  enqueued: number;
  retries: number;
  scheduled: number;
  dead: number;
  default_latency?: number;
  redis?: Json;
}

const REALTIME_POINTS = 60;
export const realtime = { t: [] as number[], processed: [] as number[], failed: [] as number[] };

let stats: Stats | undefined;
let error: ApiError | undefined;
let previous: { t: number; processed: number; failed: number } | undefined;
const listeners = new Set<() => void>();

function num(data: Json, ...names: string[]): number {
  for (const name of names) {
    const value = data[name];
    if (typeof value === "number") return value;
    if (typeof value === "string" && value !== "" && Number.isFinite(Number(value))) return Number(value);
  }
  return 0;
}

/** Accept the spec's names and the data API's (`retry_size`, …) alike. */
function normalise(data: Json): Stats {
  return {
    ...data,
    processed: num(data, "processed"),
    failed: num(data, "failed"),
    busy: num(data, "busy", "workers_size", "workers"),
    processes: num(data, "processes", "processes_size"),
    enqueued: num(data, "enqueued"),
    retries: num(data, "retries", "retry_size"),
    scheduled: num(data, "scheduled", "scheduled_size"),
    dead: num(data, "dead", "dead_size"),
    default_latency: num(data, "default_latency", "default_queue_latency", "latency"),
  };
}

function record(next: Stats): void {
  const t = Date.now() / 1000;
  if (previous) {
    realtime.t.push(t);
    realtime.processed.push(Math.max(0, next.processed - previous.processed));
    realtime.failed.push(Math.max(0, next.failed - previous.failed));
    if (realtime.t.length > REALTIME_POINTS) {
      realtime.t.shift();
      realtime.processed.shift();
      realtime.failed.shift();
    }
  }
  previous = { t, processed: next.processed, failed: next.failed };
}

let inFlight = false;
async function load(): Promise<void> {
  if (inFlight) return;
  inFlight = true;
  try {
    stats = normalise(await api.stats());
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
