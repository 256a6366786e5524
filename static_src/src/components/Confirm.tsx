// A modal confirmation (<dialog>, so focus and Escape behave): `await ask({...})`.

import { useEffect, useRef, useState } from "preact/hooks";

interface Question {
  title: string;
  body: string;
  confirm: string;
  danger?: boolean;
}

let pending: { question: Question; resolve: (ok: boolean) => void } | null = null;
let show: (() => void) | null = null;

export function ask(question: Question): Promise<boolean> {
  pending?.resolve(false);
  return new Promise((resolve) => {
    pending = { question, resolve };
    show?.();
  });
}

export function ConfirmHost() {
  const [, setState] = useState(0);
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    show = () => setState((n) => n + 1);
    return () => void (show = null);
  }, []);
  useEffect(() => {
    if (pending && dialog.current && !dialog.current.open) dialog.current.showModal();
  });
  const close = (ok: boolean) => {
    const current = pending;
    pending = null;
    dialog.current?.close();
    current?.resolve(ok);
    setState((n) => n + 1);
  };
  const q = pending?.question;
  return (
    <dialog ref={dialog} class="w-dialog" onCancel={() => close(false)} aria-labelledby="w-dialog-title">
      {q && (
        <form method="dialog" onSubmit={(e) => { e.preventDefault(); close(true); }}>
          <h2 id="w-dialog-title">{q.title}</h2>
          <p>{q.body}</p>
          <div class="w-dialog-buttons">
            {/* A destructive question starts on Cancel, so a stray Enter changes nothing. */}
            <button type="button" class="w-btn" autofocus={q.danger} onClick={() => close(false)}>Cancel</button>
            <button type="submit" class={q.danger ? "w-btn w-btn-danger" : "w-btn w-btn-primary"} autofocus={!q.danger}>
              {q.confirm}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
