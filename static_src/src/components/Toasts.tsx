// Short messages after actions (Sidekiq's flash messages become toasts). They sit at the
// bottom right, above the page; the page keeps as much room below its content as the
// toasts take (--w-toasts-h), so the last row's buttons can always be scrolled clear of
// them, and clicks pass through a toast to whatever is under it.

import { useEffect, useRef, useState } from "preact/hooks";

interface Toast {
  id: number;
  text: string;
  kind: "ok" | "error";
}

let toasts: Toast[] = [];
let nextId = 1;
const listeners = new Set<() => void>();
const emit = () => listeners.forEach((fn) => fn());

export function toast(text: string, kind: "ok" | "error" = "ok"): void {
  const id = nextId++;
  toasts = [...toasts, { id, text, kind }];
  emit();
  window.setTimeout(() => {
    toasts = toasts.filter((t) => t.id !== id);
    emit();
  }, kind === "error" ? 8000 : 4000);
}

const BOTTOM_GAP_PX = 20; // .w-toasts { bottom } in styles.css

export function Toasts() {
  const [, setState] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const update = () => setState((n) => n + 1);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  useEffect(() => {
    const el = box.current!;
    const root = document.documentElement;
    const observer = new ResizeObserver(() => {
      const height = el.offsetHeight;
      root.style.setProperty("--w-toasts-h", height ? `${height + BOTTOM_GAP_PX}px` : "0px");
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return (
    <div class="w-toasts" role="status" aria-live="polite" ref={box}>
      {toasts.map((t) => (
        <div key={t.id} class={`w-toast w-toast-${t.kind}`} data-toast={t.kind}>{t.text}</div>
      ))}
    </div>
  );
}
