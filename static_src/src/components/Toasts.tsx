// Short messages after actions (Sidekiq's flash messages become toasts, §1.10).

import { useEffect, useState } from "preact/hooks";

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

export function Toasts() {
  const [, setState] = useState(0);
  useEffect(() => {
    const update = () => setState((n) => n + 1);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return (
    <div class="w-toasts" role="status" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} class={`w-toast w-toast-${t.kind}`}>{t.text}</div>
      ))}
    </div>
  );
}
