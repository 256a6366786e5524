// The one module that talks to the JSON API (dashboard.md §2). Every page goes through
// here: URLs are built from the shell's config, mutations carry the CSRF header that
// `meta` names, and errors arrive as ApiError built from RFC 9457 problem JSON.

import { config } from "./config";

export type Json = Record<string, any>;
export type SetName = "retries" | "scheduled" | "dead";

export interface Meta {
  version?: string;
  read_only: boolean;
  can_change: boolean;
  user?: string | { username?: string; name?: string };
  csrf_header?: string;
  csrf_header_name?: string;
  csrf_cookie?: string;
  csrf_cookie_name?: string;
  csrf_token?: string;
  poll_default?: number;
  poll_interval_s?: number;
  server_time_ms?: number;
  features?: Record<string, boolean> | string[];
  admin_url?: string;
  logout_url?: string;
}

export interface Paged<T = Json> {
  items: T[];
  page: number;
  count: number;
  total: number;
  pages: number;
  sort?: string;
  truncated?: boolean;
}

export interface MutationResult {
  requested?: number;
  done?: number;
  missing?: number;
  remaining?: number;
  [key: string]: any;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly detail: string,
    readonly body: Json = {},
  ) {
    super(detail || type || `HTTP ${status}`);
  }
}

let csrf = { header: "X-CSRFToken", cookie: "csrftoken", token: "" };

/** Remember how to send the CSRF token, as `meta` describes it. */
export function setCsrf(meta: Meta): void {
  let header = meta.csrf_header || meta.csrf_header_name || csrf.header;
  // Django's CSRF_HEADER_NAME is a META key ("HTTP_X_CSRFTOKEN"); turn it into a header.
  if (header.startsWith("HTTP_")) header = header.slice(5).replace(/_/g, "-");
  csrf = {
    header,
    cookie: meta.csrf_cookie || meta.csrf_cookie_name || csrf.cookie,
    token: meta.csrf_token || "",
  };
}

function csrfToken(): string {
  if (csrf.token) return csrf.token;
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === csrf.cookie) return decodeURIComponent(rest.join("="));
  }
  return "";
}

/** `path` under the API base with a query built from the defined, non-empty values. */
export function apiUrl(path: string, query: Record<string, unknown> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const qs = params.toString();
  return config.api + path + (qs ? "?" + qs : "");
}

/** One path segment from an untrusted name (a queue, a key, an identity). */
export const seg = (value: string): string => encodeURIComponent(value);

async function request(method: string, url: string, body?: unknown): Promise<any> {
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
  const text = await response.text();
  let data: any = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = {};
  }
  if (!response.ok) {
    const type = String(data.type || "").replace(/^.*\//, "") || `http_${response.status}`;
    throw new ApiError(response.status, type, data.detail || data.title || response.statusText, data);
  }
  return data;
}

export const get = <T = any>(path: string, query?: Record<string, unknown>): Promise<T> =>
  request("GET", apiUrl(path, query));
export const post = (path: string, body?: unknown): Promise<MutationResult> =>
  request("POST", apiUrl(path), body);
export const del = (path: string, body?: unknown): Promise<MutationResult> =>
  request("DELETE", apiUrl(path), body);

// Resource helpers: the paths of dashboard.md §2.2 in one place.
export const api = {
  meta: () => get<Meta>("meta"),
  stats: () => get("stats"),
  history: (days: number) => get("stats/history", { days }),
  processes: () => get("processes"),
  work: (query: Json) => get<Paged>("work", query),
  signalProcess: (identity: string, action: "quiet" | "stop") =>
    post(`processes/${seg(identity)}/${action}`),
  signalAll: (action: "quiet" | "stop") => post(`processes/${action}`),
  queues: () => get("queues"),
  queueJobs: (name: string, query: Json) => get<Paged>(`queues/${seg(name)}/jobs`, query),
  pauseQueue: (name: string, pause: boolean) =>
    post(`queues/${seg(name)}/${pause ? "pause" : "resume"}`),
  clearQueue: (name: string) => del(`queues/${seg(name)}`),
  deleteQueueJobs: (name: string, raws: string[]) =>
    post(`queues/${seg(name)}/jobs/delete`, { keys: raws }),
  set: (set: SetName, query: Json) => get<Paged>(`sets/${set}`, query),
  job: (set: SetName, key: string) => get(`sets/${set}/${seg(key)}`),
  jobAction: (set: SetName, key: string, action: string) =>
    action === "delete" ? del(`sets/${set}/${seg(key)}`) : post(`sets/${set}/${seg(key)}/${action}`),
  bulk: (set: SetName, action: string, keys: string[]) =>
    post(`sets/${set}/bulk`, { action, keys }),
  all: (set: SetName, action: string, confirmTotal: number) =>
    post(`sets/${set}/all/${action}`, { confirm_total: confirmTotal }),
  metrics: (query: Json) => get("metrics", query),
  metricsClass: (klass: string, query: Json) => get(`metrics/${seg(klass)}`, query),
  periodic: () => get("periodic"),
  loop: (lid: string) => get(`periodic/${seg(lid)}`),
  loopAction: (lid: string, action: "pause" | "resume" | "run") =>
    post(`periodic/${seg(lid)}/${action}`),
  batches: (query: Json) => get<Paged>("batches", query),
  limiters: (query: Json) => get<Paged>("limiters", query),
};

/** The list inside a response: `items`, or the response itself when it is an array. */
export function itemsOf<T = Json>(data: any, key = "items"): T[] {
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data[key])) return data[key];
  if (data && Array.isArray(data.items)) return data.items;
  return [];
}
