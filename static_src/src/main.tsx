// Entry point: read `api/meta`, then render the app into the shell's root element.

import { render } from "preact";
import { api, setCsrf, type ApiError, type Meta } from "./api";
import { App } from "./App";
import { startPolling } from "./poll";
import { setSession } from "./session";
import "./styles.css";

function root(): HTMLElement {
  const found = document.getElementById("wurk-root") || document.getElementById("wurk-app");
  if (found) return found;
  const el = document.createElement("div");
  el.id = "wurk-root";
  document.body.appendChild(el);
  return el;
}

async function start(): Promise<void> {
  const el = root();
  let meta: Meta;
  try {
    meta = await api.meta();
  } catch (e) {
    const error = e as ApiError;
    el.textContent = error.status === 401
      ? "Your session has ended. Reload the page to sign in again."
      : `The dashboard could not start: ${error.message}`;
    el.className = "w-fatal";
    return;
  }
  setCsrf(meta);
  setSession(meta);
  startPolling(meta.poll_default);
  render(<App />, el);
}

start();
