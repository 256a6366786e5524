// The polling clock: one interval for the whole page (2/5/10/20/60 s or paused, kept in
// localStorage), stopped while the tab is hidden. Pages refetch when `tick` changes.

import { useEffect, useState } from "preact/hooks";

export const POLL_CHOICES = [2, 5, 10, 20, 60];
const STORAGE_KEY = "wurk.poll";

let intervalS = 5; // 0 = paused
let tick = 0;
let timer: number | undefined;
const listeners = new Set<() => void>();

function emit(): void {
  listeners.forEach((fn) => fn());
}

function schedule(): void {
  window.clearInterval(timer);
  timer = undefined;
  if (intervalS > 0 && !document.hidden) {
    timer = window.setInterval(() => {
      tick += 1;
      emit();
    }, intervalS * 1000);
  }
}

/** Start the clock: the stored choice, else the server's default. */
export function startPolling(serverDefaultS?: number): void {
  const stored = window.localStorage.getItem(STORAGE_KEY);
  if (stored !== null && (stored === "0" || POLL_CHOICES.includes(Number(stored)))) {
    intervalS = Number(stored);
  } else if (serverDefaultS && POLL_CHOICES.includes(serverDefaultS)) {
    intervalS = serverDefaultS;
  }
  document.addEventListener("visibilitychange", () => {
    // Coming back: refresh at once rather than wait a whole interval.
    if (!document.hidden && intervalS > 0) {
      tick += 1;
      emit();
    }
    schedule();
  });
  schedule();
}

export function setPollInterval(seconds: number): void {
  intervalS = seconds;
  window.localStorage.setItem(STORAGE_KEY, String(seconds));
  schedule();
  emit();
}

export function refreshNow(): void {
  tick += 1;
  emit();
}

/** The current tick and interval; a component re-renders on every tick. */
export function usePoll(): { tick: number; intervalS: number } {
  const [, setState] = useState(0);
  useEffect(() => {
    const update = () => setState((n) => n + 1);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return { tick, intervalS };
}
