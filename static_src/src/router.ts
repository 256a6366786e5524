// URL state: every page and filter lives in the address (path under the mount plus the
// query string), so each view can be bookmarked and shared.

import { useEffect, useState } from "preact/hooks";
import { config } from "./config";

export interface Location {
  path: string; // under the mount, without a leading slash: "queues/default"
  query: URLSearchParams;
}

function current(): Location {
  const { pathname, search } = window.location;
  const path = pathname.startsWith(config.mount) ? pathname.slice(config.mount.length) : "";
  return { path: path.replace(/\/+$/, ""), query: new URLSearchParams(search) };
}

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => listeners.forEach((fn) => fn()));

/** The full URL of a page under the mount, with the non-empty query values. */
export function href(path: string, query: Record<string, unknown> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const qs = params.toString();
  return config.mount + path + (qs ? "?" + qs : "");
}

export function navigate(url: string, replace = false): void {
  if (url === window.location.pathname + window.location.search) return;
  history[replace ? "replaceState" : "pushState"](null, "", url);
  listeners.forEach((fn) => fn());
  if (!replace) window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return location;
}

/** Change some query values of the current page; empty values are dropped. */
export function setQuery(patch: Record<string, unknown>, replace = false): void {
  const { path, query } = current();
  const next: Record<string, unknown> = Object.fromEntries(query.entries());
  Object.assign(next, patch);
  navigate(href(path, next), replace);
}

/** A positive integer from the query, else `fallback`. */
export function intParam(query: URLSearchParams, name: string, fallback: number): number {
  const value = Number.parseInt(query.get(name) || "", 10);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}
