// Numbers, sizes, durations and times as people read them. Times are shown in UTC by
// default with a per-user switch to local time.

import { useEffect, useState } from "preact/hooks";

export type Zone = "utc" | "local";
const ZONE_KEY = "wurk.zone";
let zone: Zone = window.localStorage.getItem(ZONE_KEY) === "local" ? "local" : "utc";
const listeners = new Set<() => void>();

export function setZone(next: Zone): void {
  zone = next;
  window.localStorage.setItem(ZONE_KEY, next);
  listeners.forEach((fn) => fn());
}

export function useZone(): Zone {
  const [, setState] = useState(0);
  useEffect(() => {
    const update = () => setState((n) => n + 1);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return zone;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `2025-03-01 14:02:03 UTC`, or local time with its offset. */
export function formatTime(ms: number | null, which: Zone = zone): string {
  if (ms === null || !Number.isFinite(ms)) return "—";
  const d = new Date(ms);
  if (which === "utc") {
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
  }
  const offset = -d.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** A duration in seconds as `45 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`. */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, seconds);
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.floor(s % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** `in 3 min 20 s` / `3 min 20 s ago`, relative to `now`. With `due`, the time is when
 * something should happen: once it has passed, it reads "due now" rather than "… ago"
 * (a retry or scheduled job waits for the scheduler's next poll, a few seconds). */
export function relative(ms: number | null, options: { due?: boolean; now?: number } = {}): string {
  if (ms === null || !Number.isFinite(ms)) return "—";
  const diff = (ms - (options.now ?? Date.now())) / 1000;
  if (options.due && diff < 1) return "due now";
  if (Math.abs(diff) < 1) return "now";
  return diff > 0 ? `in ${formatDuration(diff)}` : `${formatDuration(-diff)} ago`;
}

/** True when this browser's zone shows the same wall-clock time as UTC at `ms`. */
export const localIsUtc = (ms: number): boolean => new Date(ms).getTimezoneOffset() === 0;

const numberFormat = new Intl.NumberFormat("en-US");
export const formatNumber = (n: number | null): string =>
  n === null || !Number.isFinite(n) ? "—" : numberFormat.format(n);

/** Kilobytes (as heartbeats report RSS) in a readable unit. */
export function formatKb(kb: number): string {
  if (!kb) return "—";
  if (kb < 1024) return `${kb} KB`;
  if (kb < 1024 * 1024) return `${(kb / 1024).toFixed(1)} MB`;
  return `${(kb / 1024 / 1024).toFixed(2)} GB`;
}

/** A sorted-set score (epoch seconds, as Redis keeps it) as epoch ms. */
export const scoreMs = (score: number | null): number | null => (score === null ? null : score * 1000);
