// Metrics: per-class executions, failures, total and mean time over a period (§1.6).

import { api, itemsOf, type Json } from "../api";
import { Chart, parseMarks } from "../components/Chart";
import { Empty, ErrorBox, Link, Loading, SearchForm, Segmented } from "../components/ui";
import { formatNumber, formatTime } from "../format";
import { useResource } from "../hooks";
import { setQuery } from "../router";

export const PERIODS = ["1h", "2h", "4h", "8h", "24h", "48h", "72h"];

export interface ClassRow {
  klass: string;
  processed: number;
  failed: number;
  totalMs: number;
  meanMs: number | null;
}

function n(value: unknown): number {
  const x = Number(value);
  return Number.isFinite(x) ? x : 0;
}

/** One class's numbers; mean = ms / (processed − failed): only successes book time. */
export function classRow(row: Json): ClassRow {
  const processed = n(row.processed ?? row.p);
  const failed = n(row.failed ?? row.f);
  const totalMs = row.total_ms !== undefined || row.ms !== undefined ? n(row.total_ms ?? row.ms) : n(row.total_s) * 1000;
  const successes = processed - failed;
  const meanMs = row.mean_ms ?? row.avg_ms ?? (successes > 0 ? totalMs / successes : null);
  return { klass: String(row.class ?? row.klass ?? row.name ?? ""), processed, failed, totalMs, meanMs };
}

/** A per-minute series from `{"series": [{t, p, f, ms}]}` style answers, when present. */
export function seriesOf(data: Json | undefined): { x: number[]; p: number[]; f: number[] } | null {
  const raw = itemsOf(data, "series").length ? itemsOf(data, "series") : itemsOf(data, "minutes");
  if (!raw.length) return null;
  const rows = raw.map((r) => ({ t: typeof r.t === "number" ? r.t : Date.parse(String(r.time ?? r.t ?? r.at)) / 1000, p: n(r.processed ?? r.p), f: n(r.failed ?? r.f) }))
    .filter((r) => Number.isFinite(r.t)).sort((a, b) => a.t - b.t);
  return { x: rows.map((r) => (r.t > 1e11 ? r.t / 1000 : r.t)), p: rows.map((r) => r.p), f: rows.map((r) => r.f) };
}

function TopBars(props: { rows: ClassRow[]; period: string }) {
  const top = [...props.rows].sort((a, b) => b.totalMs - a.totalMs).slice(0, 10);
  const max = Math.max(1, ...top.map((r) => r.totalMs));
  if (!top.length) return null;
  return (
    <section class="w-panel">
      <h2>Top classes by total time</h2>
      <ul class="w-bars">
        {top.map((r) => (
          <li key={r.klass}>
            <span class="w-bar-label">{r.klass}</span>
            <span class="w-bar-track"><span class="w-bar" style={{ width: `${(r.totalMs / max) * 100}%` }} /></span>
            <span class="w-bar-value">{(r.totalMs / 1000).toFixed(1)} s</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function PeriodPicker(props: { period: string; periods?: string[] }) {
  return (
    <Segmented label="Period" value={props.period} onChange={(p) => setQuery({ period: p === "1h" ? "" : p }, true)}
      options={(props.periods || PERIODS).map((p) => ({ value: p, label: p }))} />
  );
}

export default function Metrics(props: { query: URLSearchParams }) {
  const period = PERIODS.includes(props.query.get("period") || "") ? props.query.get("period")! : "1h";
  const q = props.query.get("q") || "";
  // The one-hour view refreshes with the poll; longer windows change too slowly to bother.
  const res = useResource(() => api.metrics({ period, q }), `metrics-${period}-${q}`, period === "1h");
  const data = res.data as Json | undefined;
  const list = itemsOf(data, data?.classes ? "classes" : data?.jobs ? "jobs" : "items");
  const rows = list.map(classRow).sort((a, b) => b.totalMs - a.totalMs);
  const marks = parseMarks(data?.marks);
  const series = seriesOf(data);
  return (
    <div class="w-page">
      <div class="w-panel-head">
        <h1>Metrics</h1>
        <PeriodPicker period={period} />
      </div>
      <div class="w-toolbar"><SearchForm key={q} value={q} placeholder="Filter classes by name" /></div>
      <ErrorBox error={res.error} />
      {!data && !res.error && <Loading />}
      {data && rows.length === 0 && <Empty>No job has finished in this period{q ? " with a matching class name" : ""}.</Empty>}
      {series && series.x.length > 1 && (
        <section class="w-panel">
          <h2>Executions per minute</h2>
          <Chart label="Jobs processed and failed per minute" x={series.x} marks={marks}
            series={[{ spec: { label: "Processed", color: "--w-processed", fill: true }, values: series.p },
              { spec: { label: "Failed", color: "--w-failed", fill: true }, values: series.f }]} />
        </section>
      )}
      <TopBars rows={rows} period={period} />
      {rows.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="metrics">
            <thead><tr><th>Class</th><th class="w-num">Processed</th><th class="w-num">Failed</th><th class="w-num">Total time</th><th class="w-num">Mean time</th></tr></thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.klass}>
                  <td><Link to={`metrics/${encodeURIComponent(r.klass)}`} query={{ period: ["1h", "2h", "4h", "8h"].includes(period) && period !== "1h" ? period : "" }}>{r.klass}</Link></td>
                  <td class="w-num">{formatNumber(r.processed)}</td>
                  <td class="w-num">{formatNumber(r.failed)}</td>
                  <td class="w-num">{(r.totalMs / 1000).toFixed(2)} s</td>
                  <td class="w-num">{r.meanMs === null ? "—" : `${Number(r.meanMs).toFixed(1)} ms`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {marks.length > 0 && (
        <ul class="w-marks" aria-label="Deploy marks">
          {marks.map((m) => <li key={`${m.t}-${m.label}`}><span class="w-mark-dot" /> {formatTime(m.t * 1000)}: {m.label}</li>)}
        </ul>
      )}
    </div>
  );
}
