// Small shared pieces: links that stay in the SPA, paging, states, times, text blocks.
// Untrusted values only ever land in text nodes and attributes set by Preact.

import { Fragment, type ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "../api";
import { formatTime, localIsUtc, relative, useZone } from "../format";
import { href, navigate, setQuery } from "../router";

/** A link to a page of the dashboard, handled without a reload. */
export function Link(props: { to: string; query?: Record<string, string>; class?: string; children: ComponentChildren; title?: string }) {
  const url = href(props.to, props.query);
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(url);
  };
  return <a href={url} class={props.class} title={props.title} onClick={onClick}>{props.children}</a>;
}

export function Loading() {
  return <p class="w-muted w-loading">Loading…</p>;
}

export function Empty(props: { children: ComponentChildren }) {
  return <div class="w-empty">{props.children}</div>;
}

export function ErrorBox(props: { error: ApiError | undefined }) {
  const { error } = props;
  if (!error) return null;
  let text = error.detail || error.message;
  if (error.status === 401) text = "Your session has ended. Reload the page to sign in again.";
  if (error.type === "redis_unavailable") text = "Redis is unavailable: " + text;
  return <div class="w-banner w-banner-error" role="alert">{text}</div>;
}

/** A time in the chosen zone, with the relative time beside it and the other zone on
 * hover (when it differs). `due`: a time something should happen at (see `relative`). */
export function Time(props: { ms: number | null; rel?: boolean; due?: boolean }) {
  const zone = useZone();
  const { ms } = props;
  if (ms === null) return <span class="w-muted">—</span>;
  const other = localIsUtc(ms) ? undefined : formatTime(ms, zone === "utc" ? "local" : "utc");
  return (
    <time dateTime={new Date(ms).toISOString()} title={other}>
      {props.rel ? relative(ms, { due: props.due }) : formatTime(ms)}
    </time>
  );
}

/** Both zones at once, for detail pages; one line when this browser's zone is UTC. */
export function BothTimes(props: { ms: number | null; due?: boolean }) {
  const { ms } = props;
  if (ms === null) return <span class="w-muted">—</span>;
  return (
    <span class="w-times">
      {!localIsUtc(ms) && <span>{formatTime(ms, "local")} <span class="w-muted">(local)</span></span>}
      <span>{formatTime(ms, "utc")}</span>
      <span class="w-muted">{relative(ms, { due: props.due })}</span>
    </span>
  );
}

/** What the server could not read (keys holding the wrong type), above what it could. */
export function Problems(props: { problems: string[] | undefined }) {
  const problems = props.problems ?? [];
  if (problems.length === 0) return null;
  return (
    <div class="w-banner w-banner-warning" role="note" data-banner="problems">
      <div>Some data in Redis could not be read and is left out:</div>
      <ul class="w-problems">{problems.map((p) => <li key={p}>{p}</li>)}</ul>
    </div>
  );
}

/** Pre-formatted untrusted text; long text is folded behind "show all". */
export function Pre(props: { text: string; limit?: number; truncated?: boolean }) {
  const limit = props.limit ?? 4000;
  const [all, setAll] = useState(false);
  const long = props.text.length > limit;
  return (
    <div class="w-pre-wrap">
      <pre class="w-pre">{all || !long ? props.text : props.text.slice(0, limit) + "…"}</pre>
      {long && (
        <button type="button" class="w-link-button" onClick={() => setAll(!all)}>
          {all ? "Show less" : `Show all (${props.text.length.toLocaleString("en-US")} characters)`}
        </button>
      )}
      {props.truncated && <p class="w-muted">Cut by the server; the job detail shows everything.</p>}
    </div>
  );
}

/** Page links that change `page` in the URL. */
export function Pager(props: { page: number; pages: number; total?: number }) {
  const { page, pages } = props;
  if (pages <= 1) return null;
  const go = (n: number) => setQuery({ page: n === 1 ? "" : n });
  const numbers = new Set([1, pages, page - 2, page - 1, page, page + 1, page + 2]);
  const list = [...numbers].filter((n) => n >= 1 && n <= pages).sort((a, b) => a - b);
  return (
    <nav class="w-pager" aria-label="Pages">
      <button type="button" class="w-btn" disabled={page <= 1} onClick={() => go(page - 1)}>‹ Previous</button>
      {list.map((n, i) => (
        <Fragment key={n}>
          {i > 0 && n - list[i - 1] > 1 && <span class="w-muted">…</span>}
          <button type="button" class={n === page ? "w-btn w-btn-current" : "w-btn"}
            aria-current={n === page ? "page" : undefined} onClick={() => go(n)}>{n}</button>
        </Fragment>
      ))}
      <button type="button" class="w-btn" disabled={page >= pages} onClick={() => go(page + 1)}>Next ›</button>
    </nav>
  );
}

/** A row of toggle buttons, one of which is pressed. */
export function Segmented<T extends string | number>(props: {
  label: string; value: T; options: { value: T; label: string }[]; onChange: (value: T) => void;
}) {
  return (
    <div class="w-segmented" role="group" aria-label={props.label}>
      {props.options.map((o) => (
        <button type="button" key={String(o.value)} class="w-btn" aria-pressed={o.value === props.value}
          onClick={() => props.onChange(o.value)}>{o.label}</button>
      ))}
    </div>
  );
}

/** A search box whose value lives in the URL as `q`; applied on submit. */
export function SearchForm(props: { value: string; placeholder: string; label?: string }) {
  const [text, setText] = useState(props.value);
  return (
    <form class="w-search" role="search" onSubmit={(e) => { e.preventDefault(); setQuery({ q: text.trim(), page: "" }); }}>
      <input type="search" value={text} placeholder={props.placeholder} aria-label={props.label || props.placeholder}
        onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      <button type="submit" class="w-btn">Search</button>
      {props.value && (
        <button type="button" class="w-btn" onClick={() => { setText(""); setQuery({ q: "", page: "" }); }}>Clear</button>
      )}
    </form>
  );
}

export function Badge(props: { kind?: string; children: ComponentChildren; title?: string }) {
  return <span class={`w-badge w-badge-${props.kind || "info"}`} title={props.title}>{props.children}</span>;
}
