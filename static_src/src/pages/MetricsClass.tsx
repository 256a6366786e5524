// One class's metrics (≤ 8 h): execution-time histogram and per-minute executions.

import { api, type ClassMetrics } from "../api";
import { Chart, chartMarks } from "../components/Chart";
import { Empty, ErrorBox, Link, Loading } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { bucketTimes, classRow, column, FAILED, PeriodPicker, PROCESSED } from "./Metrics";

const PERIODS = ["1h", "2h", "4h", "8h"];

function ms(bound: number): string {
  return bound >= 1000 ? `${bound / 1000} s` : `${bound} ms`;
}

/** Histogram rows [label, count] from `{bounds_ms, counts}`: bucket i holds runs shorter
 * than bounds[i], the last one everything longer; empty buckets at both ends are dropped. */
function buckets(data: ClassMetrics): [string, number][] {
  const { bounds_ms: bounds, counts } = data.histogram;
  const rows = counts.map((c, i): [string, number] =>
    [i < bounds.length ? `< ${ms(bounds[i])}` : `≥ ${ms(bounds[bounds.length - 1])}`, c]);
  const first = rows.findIndex(([, c]) => c > 0);
  if (first < 0) return [];
  const last = rows.length - 1 - [...rows].reverse().findIndex(([, c]) => c > 0);
  return rows.slice(first, last + 1);
}

export default function MetricsClass(props: { params: string[]; query: URLSearchParams }) {
  const klass = props.params[0];
  const period = PERIODS.includes(props.query.get("period") || "") ? props.query.get("period")! : "1h";
  const res = useResource(() => api.metricsClass(klass, { period }), `metrics-${klass}-${period}`, period === "1h");
  const data = res.data;
  const totals = data ? classRow(data.totals) : null;
  const hist = data ? buckets(data) : [];
  const max = Math.max(1, ...hist.map(([, c]) => c));
  const x = data ? bucketTimes(data.buckets) : [];
  const marks = data ? chartMarks(data.marks) : [];
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="metrics">Metrics</Link> ›</p>
      <div class="w-panel-head">
        <h1>{klass}</h1>
        <PeriodPicker period={period} periods={PERIODS} />
      </div>
      <ErrorBox error={res.error} />
      {!data && !res.error && <Loading />}
      {totals && (
        <dl class="w-facts w-facts-row">
          <div><dt>Processed</dt><dd>{formatNumber(totals.processed)}</dd></div>
          <div><dt>Failed</dt><dd>{formatNumber(totals.failed)}</dd></div>
          <div><dt>Total time</dt><dd>{formatDuration(totals.totalMs / 1000)}</dd></div>
          <div><dt>Mean time</dt><dd>{totals.meanMs === null ? "—" : `${totals.meanMs.toFixed(1)} ms`}</dd></div>
        </dl>
      )}
      {data && (
        <section class="w-panel">
          <h2>Execution time histogram</h2>
          {hist.length === 0
            ? <Empty>No execution of {klass} was recorded in this period.</Empty>
            : (
              <ul class="w-bars w-histogram" aria-label="Executions per time bucket">
                {hist.map(([label, count]) => (
                  <li key={label}>
                    <span class="w-bar-label">{label}</span>
                    <span class="w-bar-track"><span class="w-bar" style={{ width: `${(count / max) * 100}%` }} /></span>
                    <span class="w-bar-value">{formatNumber(count)}</span>
                  </li>
                ))}
              </ul>
            )}
        </section>
      )}
      {data && x.length > 1 && (
        <section class="w-panel">
          <h2>Executions per minute</h2>
          <Chart label={`${klass}: executions per minute`} x={x} marks={marks}
            series={[{ spec: { label: "Processed", color: "--w-processed", fill: true }, values: column(data.series, PROCESSED) },
              { spec: { label: "Failed", color: "--w-failed", fill: true }, values: column(data.series, FAILED) }]} />
        </section>
      )}
    </div>
  );
}
