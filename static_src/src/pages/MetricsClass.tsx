// One class's metrics (≤ 8 h): execution-time histogram and per-minute executions (§1.6).

import { api, itemsOf, type Json } from "../api";
import { Chart, parseMarks } from "../components/Chart";
import { Empty, ErrorBox, Link, Loading } from "../components/ui";
import { formatNumber } from "../format";
import { useResource } from "../hooks";
import { classRow, PeriodPicker, seriesOf } from "./Metrics";

const PERIODS = ["1h", "2h", "4h", "8h"];

/** Histogram buckets as [label, count] from a list or a {label: count} object. */
function buckets(data: Json | undefined): [string, number][] {
  const h = data?.histogram ?? data?.hist;
  if (!h) return [];
  if (Array.isArray(h)) {
    return h.map((b: any, i: number) => Array.isArray(b)
      ? [String(b[0]), Number(b[1]) || 0]
      : [String(b.label ?? b.bucket ?? b.le ?? i), Number(b.count ?? b.value) || 0]);
  }
  if (Array.isArray(h.counts)) {
    return h.counts.map((c: number, i: number) => [String(h.labels?.[i] ?? h.buckets?.[i] ?? i), Number(c) || 0]);
  }
  return Object.entries(h).map(([label, count]) => [label, Number(count) || 0]);
}

export default function MetricsClass(props: { params: string[]; query: URLSearchParams }) {
  const klass = props.params[0];
  const period = PERIODS.includes(props.query.get("period") || "") ? props.query.get("period")! : "1h";
  const res = useResource(() => api.metricsClass(klass, { period }), `metrics-${klass}-${period}`, period === "1h");
  const data = res.data as Json | undefined;
  const totals = data ? classRow({ class: klass, ...(data.totals ?? data.summary ?? data) }) : null;
  const hist = buckets(data);
  const max = Math.max(1, ...hist.map(([, c]) => c));
  const series = seriesOf(data);
  const marks = parseMarks(data?.marks);
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
          <div><dt>Total time</dt><dd>{(totals.totalMs / 1000).toFixed(2)} s</dd></div>
          <div><dt>Mean time</dt><dd>{totals.meanMs === null ? "—" : `${Number(totals.meanMs).toFixed(1)} ms`}</dd></div>
        </dl>
      )}
      {data && (
        <section class="w-panel">
          <h2>Execution time histogram</h2>
          {hist.every(([, c]) => c === 0)
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
      {series && series.x.length > 1 && (
        <section class="w-panel">
          <h2>Executions per minute</h2>
          <Chart label={`${klass}: executions per minute`} x={series.x} marks={marks}
            series={[{ spec: { label: "Processed", color: "--w-processed", fill: true }, values: series.p },
              { spec: { label: "Failed", color: "--w-failed", fill: true }, values: series.f }]} />
        </section>
      )}
    </div>
  );
}
