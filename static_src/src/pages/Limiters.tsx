// Rate limiters: name, type, current use against the limit; server paging, filtered by
// a name substring and a type in the URL. Thousands of interpolated names are normal.

import { useState } from "preact/hooks";
import { api, type LimiterItem } from "../api";
import { plural } from "../actions";
import { Empty, ErrorBox, Link, Loading, Pager, SearchForm, Time } from "../components/ui";
import { formatNumber } from "../format";
import { useResource } from "../hooks";
import { intParam, setQuery } from "../router";

/** What a limiter's `limit` counts, by type. */
export const LIMIT_WORDS: Record<string, string> = {
  concurrent: "slots", bucket: "calls per interval", window: "calls per window",
  leaky: "calls in the bucket", points: "points",
};

/** `used / limit` as text, and the share of the limit in use (0..1, or null). */
export function usage(item: LimiterItem): { text: string; share: number | null } {
  if (item.used === null || item.limit === null) return { text: "unknown", share: null };
  const used = Number.isInteger(item.used) ? formatNumber(item.used) : item.used.toFixed(1);
  return { text: `${used} / ${formatNumber(item.limit)}`, share: Math.min(item.used / item.limit, 1) };
}

export function UsageBar(props: { item: LimiterItem }) {
  const { text, share } = usage(props.item);
  return (
    <span class="w-usage" data-usage={share === null ? "" : share.toFixed(3)}>
      {share !== null && (
        <span class="w-bar-track"><span class={share >= 1 ? "w-bar w-bar-full" : "w-bar"} style={{ width: `${share * 100}%` }} /></span>
      )}
      <span class="w-bar-value">{text}</span>
    </span>
  );
}

function TypeFilter(props: { value: string; types: string[] }) {
  const [value, setValue] = useState(props.value);
  return (
    <label class="w-inline-field">
      <span>Type</span>
      <select value={value} aria-label="Type" onChange={(e) => {
        const next = (e.target as HTMLSelectElement).value;
        setValue(next);
        setQuery({ type: next, page: "" });
      }}>
        <option value="">All types</option>
        {props.types.map((t) => <option key={t} value={t}>{t}</option>)}
      </select>
    </label>
  );
}

function LimiterRow(props: { item: LimiterItem }) {
  const { item } = props;
  return (
    <tr data-limiter={item.name}>
      <td data-label="Name"><Link to={`limiters/${encodeURIComponent(item.name)}`} class="w-strong">{item.name}</Link></td>
      <td data-label="Type">{item.type}</td>
      <td data-label="In use" data-cell="usage"><UsageBar item={item} />
        {item.limit !== null && <div class="w-small w-muted">{LIMIT_WORDS[item.type] ?? ""}</div>}</td>
      <td data-label="Frees" class="w-num"><Time ms={item.reset_at_ms} rel due /></td>
    </tr>
  );
}

export default function Limiters(props: { query: URLSearchParams }) {
  const page = intParam(props.query, "page", 1);
  const q = props.query.get("q") || "";
  const type = props.query.get("type") || "";
  const res = useResource(() => api.limiters({ page, q, type }), `limiters-${page}-${q}-${type}`);
  const data = res.data;
  const items = data?.items ?? [];
  const filtered = q !== "" || type !== "";
  return (
    <div class="w-page">
      <h1>Rate limiters</h1>
      <div class="w-toolbar">
        <SearchForm value={q} placeholder="Filter by name" />
        <TypeFilter value={type} types={data?.types ?? ["concurrent", "bucket", "window", "leaky", "points"]} />
      </div>
      <ErrorBox error={res.error} />
      {res.loading && !data && <Loading />}
      {data && items.length === 0 && (
        <Empty>{filtered ? "No rate limiter matches." : "No rate limiter has been used yet: they appear here on their first call."}</Empty>
      )}
      {items.length > 0 && (
        <>
          <p class="w-muted w-small" data-total={data?.total}>{plural(data?.total ?? 0, "limiter")}</p>
          <div class="w-table-wrap">
            <table class="w-table w-stack" data-table="limiters">
              <thead><tr><th>Name</th><th>Type</th><th>In use</th><th class="w-num">Frees</th></tr></thead>
              <tbody>{items.map((item) => <LimiterRow key={item.name} item={item} />)}</tbody>
            </table>
          </div>
        </>
      )}
      {data && <Pager page={data.page} pages={data.pages} />}
    </div>
  );
}
