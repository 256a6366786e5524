// Metrics: per-class executions, failures, total and mean time over a period.

import { api, type ClassTotals, type Metrics as MetricsData, type Point } from "../api";
import { Chart, chartMarks } from "../components/Chart";
import { Empty, ErrorBox, Link, Loading, SearchForm, Segmented } from "../components/ui";
import { formatDuration, formatNumber, formatTime } from "../format";
import { useResource } from "../hooks";
import { setQuery } from "../router";

export const PERIODS = ["1h", "2h", "4h", "8h", "24h", "48h", "72h"];

export interface ClassRow {
  klass: string;
  processed: number;
  failed: number;
  totalMs: number;
  meanMs: number | null; // null when no run succeeded: only successes book time
}

export function classRow(totals: ClassTotals): ClassRow {
  const successes = totals.processed - totals.failed;
  return { klass: totals.class, processed: totals.processed, failed: totals.failed,
    totalMs: totals.total_ms, meanMs: successes > 0 ? totals.avg_ms : null };
}

/** Bucket start times (epoch seconds) of a metrics answer. */
export const bucketTimes = (buckets: number[]): number[] => buckets.map((ms) => ms / 1000);

/** One column of `[processed, failed, ms]` points. */
export const PROCESSED = 0, FAILED = 1, MS = 2;
export const column = (points: Point[], index: number): number[] => points.map((p) => p[index]);

const PALETTE = ["--w-c1", "--w-c2", "--w-c3", "--w-c4", "--w-c5"];

/** Total run time per bucket of the top classes (the answer's `series`, keyed by class). */
function TopChart(props: { data: MetricsData }) {
  const { data } = props;
  const x = bucketTimes(data.buckets);
  const series = Object.entries(data.series);
  if (x.length < 2 || series.length === 0) return null;
  return (
    <section class="w-panel">
      <h2>Run time of the top classes <span class="w-muted w-small">seconds per {data.bucket_s >= 600 ? "10 minutes" : "minute"}</span></h2>
      <Chart label="Total run time per time bucket of the busiest classes" x={x} marks={chartMarks(data.marks)}
        series={series.slice(0, PALETTE.length).map(([klass, points], i) => ({
          spec: { label: klass, color: PALETTE[i] },
          values: column(points, MS).map((ms) => ms / 1000),
        }))} />
    </section>
  );
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
            <span class="w-bar-value">{formatDuration(r.totalMs / 1000)}</span>
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
  const data = res.data;
  const rows = (data?.items ?? []).map(classRow).sort((a, b) => b.totalMs - a.totalMs);
  const marks = data ? chartMarks(data.marks) : [];
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
      {data && rows.length > 0 && <TopChart data={data} />}
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
                  <td class="w-num">{formatDuration(r.totalMs / 1000)}</td>
                  <td class="w-num">{r.meanMs === null ? "—" : `${r.meanMs.toFixed(1)} ms`}</td>
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
