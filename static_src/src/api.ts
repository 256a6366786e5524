// The one module that talks to the JSON API. One interface per endpoint, exactly as the
// server answers (the mock server's fixture is recorded from the real API and checked
// against these types by src/contract.ts); mutations carry the CSRF header that `meta`
// names, and errors arrive as ApiError built from RFC 9457 problem JSON.

import { config } from "./config";

export type SetName = "retries" | "scheduled" | "dead";
export type Feature = "metrics" | "periodic" | "queue_pause" | "batches" | "limiters" | "profiles";
export type Sort = "asc" | "desc";

export interface Meta {
  version: string;
  read_only: boolean;
  can_change: boolean;
  user: { username: string; name: string };
  csrf_header: string; // Django's CSRF_HEADER_NAME as a header name, e.g. "X-CSRFTOKEN"
  csrf_cookie: string;
  csrf_token: string;
  poll_default: number;
  poll_choices: number[];
  features: Record<Feature, boolean>;
  sets: Record<SetName, { row_actions: string[]; all_actions: string[] }>;
  admin_url: string;
  logout_url: string;
  server_time_ms: number;
}

export interface RedisInfo {
  redis_version: string;
  uptime_in_days: number;
  connected_clients: number;
  used_memory_human: string;
  used_memory_peak_human: string;
  valkey_version?: string;
  server_time_ms: number;
}

/** `api/stats`. A count is null when its key holds the wrong type (see `problems`). */
export interface Stats {
  processed: number | null;
  failed: number | null;
  busy: number;
  processes: number | null;
  enqueued: number | null;
  retries: number | null;
  scheduled: number | null;
  dead: number | null;
  default_latency: number | null; // seconds
  redis: RedisInfo;
  server_time_ms: number;
  problems: string[];
}

export interface Mark {
  at: string; // RFC 3339, UTC minute
  at_ms: number;
  label: string;
}

export interface History {
  days: number;
  processed: Record<string, number>; // "YYYY-MM-DD" → count, oldest first
  failed: Record<string, number>;
  marks: Mark[];
}

export interface Capsule {
  concurrency: number;
  mode: string;
  weights: Record<string, number>;
}

export interface ProcessItem {
  identity: string;
  hostname: string | null;
  pid: number | null;
  tag: string | null;
  labels: string[];
  queues: string[];
  weights: Record<string, number>[];
  capsules: Record<string, Capsule>;
  version: string | null;
  concurrency: number;
  busy: number;
  rss: number; // KB
  rtt_us: number;
  started_at_ms: number | null;
  beat_ms: number | null;
  quiet: boolean;
  stopping: boolean;
  embedded: boolean;
  stale: boolean;
}

export interface Processes {
  items: ProcessItem[];
  total: number;
  processes: number;
  threads: number;
  busy: number;
  utilization: number; // percent
  rss: number;
  problems: string[];
}

export interface Paged<T> {
  items: T[];
  page: number;
  count: number;
  total: number;
  pages: number;
  sort: Sort;
  truncated: boolean;
}

/** A job as every list shows it; `args_preview` is server-made JSON text. */
export interface JobRow {
  key: string;
  jid: string | null;
  class: string | null;
  display_class: string | null;
  queue: string | null;
  score: number | null; // epoch seconds, for sorted-set rows
  created_at_ms: number | null;
  enqueued_at_ms: number | null;
  failed_at_ms: number | null;
  retried_at_ms: number | null;
  retry_count: number | null; // Sidekiq's: 0 after the first failure
  retry: boolean | number | string | null;
  error_class: string | null;
  error_message: string | null;
  tags: (string | null)[];
  bid: string | null;
  encrypted: boolean;
  parsed: boolean;
  args_preview: string;
  args_truncated: boolean;
}

export interface WorkItem extends JobRow {
  identity: string;
  tid: string;
  run_at_ms: number | null;
}

export interface Work extends Paged<WorkItem> {
  problems: string[];
}

export interface QueueItem {
  name: string;
  size: number | null; // null: the key holds the wrong type (see `error`)
  latency: number | null; // seconds
  paused: boolean;
  error: string | null;
}

export interface Queues {
  items: QueueItem[];
  total: number;
}

export interface QueueInfo {
  name: string;
  size: number;
  latency: number;
  paused: boolean;
}

export interface QueueJob extends JobRow {
  raw: string; // the exact payload: LREM needs it byte for byte
}

export interface QueueJobs extends Paged<QueueJob> {
  direction: Sort;
  queue: string;
}

export interface SetPage extends Paged<JobRow> {
  set: SetName;
}

export interface RetryOptions {
  backtrace: boolean | number | null;
  retry_for: number | null; // seconds
  retry_queue: string | null;
  dead: boolean | null;
}

export interface JobDetail extends JobRow {
  args: unknown[] | null; // null when the payload does not parse
  raw: string;
  backtrace: string[] | null;
  backtrace_unreadable: boolean;
  wrapped: string | null;
  extra: Record<string, string>; // other payload fields as JSON text
  custom_rows: [string, string][];
  retry_options: RetryOptions;
}

export interface ClassTotals {
  class: string;
  processed: number;
  failed: number;
  total_ms: number;
  avg_ms: number; // per successful run
}

/** [processed, failed, ms] per bucket, in `series_fields` order. */
export type Point = [number, number, number];

interface MetricsWindow {
  period: string;
  bucket_s: number;
  starts_at_ms: number;
  ends_at_ms: number;
  buckets: number[]; // bucket starts, epoch ms
  marks: Mark[];
  series_fields: string[];
}

export interface Metrics extends MetricsWindow {
  items: ClassTotals[];
  total: number;
  series: Record<string, Point[]>; // the top classes only
}

export interface ClassMetrics extends MetricsWindow {
  class: string;
  totals: ClassTotals;
  series: Point[];
  histogram: { bounds_ms: number[]; counts: number[] };
  histograms: number[][];
}

export interface Loop {
  lid: string;
  schedule: string;
  class: string;
  queue: string | null;
  retry: boolean | number | null;
  tz: string;
  paused: boolean;
  args_preview: string;
  args_truncated: boolean;
  options: Record<string, string>; // JSON text per option
  last_fired_at_ms: number | null;
  next_fire_at_ms: number | null;
}

export interface Loops {
  items: Loop[];
  total: number;
  leader: string | null;
  server_time_ms: number;
  problems: string[];
}

export interface LoopDetail extends Loop {
  history: { fired_at_ms: number; jid: string }[];
  server_time_ms: number;
}

/** One rate limiter in `api/limiters`: its use against its limit (null when unknown: a
 * type or options this version cannot read, or a key of another type). */
export interface LimiterItem {
  name: string;
  type: string; // concurrent, bucket, window, leaky, points (or one Wurk does not know)
  known: boolean;
  limit: number | null;
  used: number | null;
  available: number | null;
  reset_at_ms: number | null;
  options: Record<string, string>; // JSON text per option
}

export interface Limiters {
  items: LimiterItem[];
  page: number;
  count: number;
  total: number;
  pages: number;
  sort: Sort;
  truncated: boolean;
  q: string;
  type: string | null;
  types: string[];
  server_time_ms: number;
}

export interface LimiterMetrics {
  held: number; // slots taken (concurrent)
  held_time_s: number;
  immediate: number; // admitted within 50 ms
  waited: number;
  wait_time_s: number;
  overages: number; // refused after waiting
  reclaimed: number; // leases of crashed holders taken back
  reschedules: number; // jobs rescheduled by the worker for this limiter
}

export interface LimiterDetail extends LimiterItem {
  metrics: LimiterMetrics;
  ttl_s: number | null;
  server_time_ms: number;
}

/** One batch in `api/batches`, `api/batches/dead` and a batch's family; `exists` is false
 * for an index entry whose batch has expired (the index is trimmed later). `done` counts
 * the jobs that succeeded; `score_ms` is when it was created (dead batches: when it died). */
export interface BatchRow {
  bid: string;
  exists: boolean;
  description: string | null;
  total: number;
  pending: number;
  failures: number;
  done: number;
  created_at_ms: number | null;
  complete: boolean;
  complete_at_ms: number | null;
  success: boolean;
  success_at_ms: number | null;
  dead: boolean;
  death_at_ms: number | null;
  invalidated: boolean;
  parent_bid: string | null;
  tags: string[];
  callback_queue: string;
  score_ms: number | null;
}

export interface BatchPage extends Paged<BatchRow> {
  tag: string;
  q: string;
}

/** The first members of one of a batch's sets, and how many it has. */
export interface Capped<T> {
  items: T[];
  total: number;
}

export interface BatchCallback {
  event: string; // complete, success or death
  target: string;
  options: string; // JSON text
  fired: boolean; // whether the event has fired (its callback jobs were pushed)
}

export interface BatchDetail extends BatchRow {
  callback_class: string | null;
  linger_s: number | null;
  callbacks: BatchCallback[];
  live: number; // jobs not yet run to the end
  failed: Capped<string>; // jids failing now (in the retry set)
  dead_jids: Capped<string>; // jids in the dead set
  children: Capped<BatchRow>;
  pending_children: number; // children not yet complete
  parent: BatchRow | null;
}

export interface InvalidateResult extends MutationResult {
  bid: string;
  invalidated: number; // batches marked: this one and those below it
}

/** `api/snapshots`: the history snapshots of the last `range_s` seconds, oldest first.
 * Each row is `[at_ms, ...fields]` in the order of `fields`; a value is null where the
 * snapshot lacks it. `interval_s` is this process's RETAIN_HISTORY (null: not set here). */
export interface Snapshots {
  interval_s: number | null;
  range_s: number;
  fields: string[];
  items: (number | null)[][];
  marks: Mark[];
}

export interface MutationResult {
  requested: number;
  done: number;
  missing: number; // rows that vanished meanwhile
  remaining: number;
}

export interface BulkResult extends MutationResult {
  skipped: number; // unparseable rows an action cannot move
}

export interface RunResult extends MutationResult {
  lid: string;
  jid: string;
}

export interface ResetResult extends MutationResult {
  name: string;
}

export interface PauseResult extends MutationResult {
  name: string;
  paused: boolean;
}

/** RFC 9457 problem JSON, as every error answer of the API is. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  total?: number; // 409 on an "all" action: the set's size now
  feature?: Feature; // 501 not_available
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly detail: string,
    readonly problem?: Problem,
  ) {
    super(detail || type || `HTTP ${status}`);
  }
}

let csrf = { header: "X-CSRFToken", cookie: "csrftoken", token: "" };

/** Remember how to send the CSRF token, as `meta` describes it. */
export function setCsrf(meta: Meta): void {
  csrf = { header: meta.csrf_header, cookie: meta.csrf_cookie, token: meta.csrf_token };
}

function csrfToken(): string {
  if (csrf.token) return csrf.token;
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === csrf.cookie) return decodeURIComponent(rest.join("="));
  }
  return "";
}

export type Query = Record<string, string | number | undefined>;

/** `path` under the API base with a query built from the defined, non-empty values. */
export function apiUrl(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(key, String(value));
  }
  const qs = params.toString();
  return config.api + path + (qs ? "?" + qs : "");
}

/** One path segment from an untrusted name (a queue, a key, an identity). */
export const seg = (value: string): string => encodeURIComponent(value);

function isProblem(data: unknown): data is Problem {
  return typeof data === "object" && data !== null && typeof (data as Problem).type === "string";
}

async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers[csrf.header] = csrfToken();
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: "same-origin",
      body: method === "GET" ? undefined : JSON.stringify(body ?? {}),
    });
  } catch {
    throw new ApiError(0, "network", "The server cannot be reached.");
  }
  let data: unknown;
  try {
    data = await response.json();
  } catch {
    // Not JSON: a proxy's error page, or a server that is not this API.
    throw new ApiError(response.status, `http_${response.status}`,
      `The server answered ${response.status} ${response.statusText} without JSON.`);
  }
  if (!response.ok) {
    if (isProblem(data)) throw new ApiError(response.status, data.type, data.detail, data);
    throw new ApiError(response.status, `http_${response.status}`, response.statusText);
  }
  return data as T;
}

export const get = <T>(path: string, query?: Query): Promise<T> => request<T>("GET", apiUrl(path, query));
const post = <T = MutationResult>(path: string, body?: unknown): Promise<T> => request<T>("POST", apiUrl(path), body);
const del = (path: string, body?: unknown): Promise<MutationResult> => request("DELETE", apiUrl(path), body);

// Every path the SPA calls, in one place.
export const api = {
  meta: () => get<Meta>("meta"),
  stats: () => get<Stats>("stats"),
  history: (days: number) => get<History>("stats/history", { days }),
  processes: () => get<Processes>("processes"),
  work: (query: { page: number; count: number }) => get<Work>("work", query),
  signalProcess: (identity: string, action: "quiet" | "stop") => post(`processes/${seg(identity)}/${action}`),
  signalAll: (action: "quiet" | "stop") => post(`processes/${action}`),
  queues: () => get<Queues>("queues"),
  queue: (name: string) => get<QueueInfo>(`queues/${seg(name)}`),
  queueJobs: (name: string, query: { page: number; direction: Sort; q: string }) =>
    get<QueueJobs>(`queues/${seg(name)}/jobs`, query),
  pauseQueue: (name: string, pause: boolean) => post<PauseResult>(`queues/${seg(name)}/${pause ? "pause" : "resume"}`),
  clearQueue: (name: string) => del(`queues/${seg(name)}`),
  deleteQueueJobs: (name: string, raws: string[]) => post(`queues/${seg(name)}/jobs/delete`, { keys: raws }),
  set: (set: SetName, query: Query) => get<SetPage>(`sets/${set}`, query),
  job: (set: SetName, key: string) => get<JobDetail>(`sets/${set}/${seg(key)}`),
  jobAction: (set: SetName, key: string, action: string) =>
    action === "delete" ? del(`sets/${set}/${seg(key)}`) : post(`sets/${set}/${seg(key)}/${action}`),
  bulk: (set: SetName, action: string, keys: string[]) => post<BulkResult>(`sets/${set}/bulk`, { action, keys }),
  all: (set: SetName, action: string, confirmTotal: number) =>
    post(`sets/${set}/all/${action}`, { confirm_total: confirmTotal }),
  metrics: (query: { period: string; q: string }) => get<Metrics>("metrics", query),
  metricsClass: (klass: string, query: { period: string }) => get<ClassMetrics>(`metrics/${seg(klass)}`, query),
  periodic: () => get<Loops>("periodic"),
  loop: (lid: string) => get<LoopDetail>(`periodic/${seg(lid)}`),
  loopAction: (lid: string, action: "pause" | "resume") => post(`periodic/${seg(lid)}/${action}`),
  runLoop: (lid: string) => post<RunResult>(`periodic/${seg(lid)}/run`),
  snapshots: (range: number) => get<Snapshots>("snapshots", { range }),
  limiters: (query: { page: number; q: string; type: string }) => get<Limiters>("limiters", query),
  limiter: (name: string) => get<LimiterDetail>(`limiters/${seg(name)}`),
  resetLimiter: (name: string) => post<ResetResult>(`limiters/${seg(name)}/reset`),
  batches: (query: { page: number; tag: string; q: string }) => get<BatchPage>("batches", query),
  deadBatches: (query: { page: number }) => get<Paged<BatchRow>>("batches/dead", query),
  batch: (bid: string) => get<BatchDetail>(`batches/${seg(bid)}`),
  invalidateBatch: (bid: string) => post<InvalidateResult>(`batches/${seg(bid)}/invalidate`),
  deleteBatch: (bid: string) => del(`batches/${seg(bid)}`),
};
