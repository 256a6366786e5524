// History: the cluster's numbers as the leader snapshots them every RETAIN_HISTORY
// seconds (the history:metrics stream): jobs processed and failed per minute, and the
// levels of the queues and sets, with deploy marks.

import { api, type Snapshots } from "../api";
import { Chart, chartMarks } from "../components/Chart";
import { Empty, ErrorBox, Loading, Segmented } from "../components/ui";
import { formatNumber, formatTime } from "../format";
import { useResource } from "../hooks";
import { setQuery } from "../router";

export const RANGES: [number, string][] = [[3600, "1 hour"], [21600, "6 hours"], [86400, "24 hours"], [259200, "3 days"]];

type Field = "processed" | "failures" | "enqueued" | "retries" | "dead" | "scheduled" | "busy";

const LEVELS: [Field, string, string][] = [
  ["enqueued", "Enqueued", "--w-c1"],
  ["busy", "Busy", "--w-c2"],
  ["retries", "Retries", "--w-c3"],
  ["scheduled", "Scheduled", "--w-c4"],
  ["dead", "Dead", "--w-c5"],
];

/** One column of the answer's rows, by field name (null where a snapshot lacks it). */
export function column(data: Snapshots, field: Field): (number | null)[] {
  const index = data.fields.indexOf(field) + 1;
  return data.items.map((row) => (index > 0 ? row[index] : null));
}

/** Jobs per minute between snapshots of a running total; null at the first snapshot,
 * across a gap in either value, and where the total went down (the counters were reset). */
export function perMinute(at: number[], totals: (number | null)[]): (number | null)[] {
  return totals.map((total, i) => {
    const before = i > 0 ? totals[i - 1] : null;
    if (total === null || before === null || total < before || at[i] <= at[i - 1]) return null;
    return ((total - before) * 60) / (at[i] - at[i - 1]);
  });
}

function Rates(props: { data: Snapshots; x: number[] }) {
  const { data, x } = props;
  return (
    <section class="w-panel">
      <h2>Throughput <span class="w-muted w-small">jobs per minute between snapshots</span></h2>
      <Chart label="Jobs processed and failed per minute, from the history snapshots" x={x} marks={chartMarks(data.marks)}
        series={[
          { spec: { label: "Processed", color: "--w-processed", fill: true }, values: perMinute(x, column(data, "processed")) },
          { spec: { label: "Failed", color: "--w-failed", fill: true }, values: perMinute(x, column(data, "failures")) },
        ]} />
    </section>
  );
}

function Levels(props: { data: Snapshots; x: number[] }) {
  const { data, x } = props;
  return (
    <section class="w-panel">
      <h2>Queues and sets <span class="w-muted w-small">jobs at each snapshot</span></h2>
      <Chart label="Jobs enqueued, running, retrying, scheduled and dead at each snapshot" x={x} marks={chartMarks(data.marks)}
        series={LEVELS.map(([field, label, color]) => ({ spec: { label, color }, values: column(data, field) }))} />
    </section>
  );
}

function Latest(props: { data: Snapshots }) {
  const last = props.data.items[props.data.items.length - 1];
  return (
    <dl class="w-facts w-facts-row" aria-label="Latest snapshot">
      <div><dt>Taken</dt><dd>{formatTime(last[0])}</dd></div>
      {LEVELS.map(([field, label]) => {
        const value = column(props.data, field).at(-1);
        return <div key={field}><dt>{label}</dt><dd>{value === null || value === undefined ? "—" : formatNumber(value)}</dd></div>;
      })}
    </dl>
  );
}

function Off() {
  return (
    <Empty>
      No history snapshots yet. Set <code>WURK["RETAIN_HISTORY"] = 30</code> and the leading worker
      records the cluster's numbers every 30 seconds.
    </Empty>
  );
}

export default function History(props: { query: URLSearchParams }) {
  const asked = Number(props.query.get("range"));
  const range = RANGES.some(([s]) => s === asked) ? asked : RANGES[0][0];
  const res = useResource(() => api.snapshots(range), `snapshots-${range}`);
  const data = res.data;
  const x = data ? data.items.map((row) => (row[0] ?? 0) / 1000) : [];
  return (
    <div class="w-page">
      <div class="w-panel-head">
        <h1>History</h1>
        <Segmented label="History range" value={range} onChange={(s) => setQuery({ range: s === RANGES[0][0] ? "" : s }, true)}
          options={RANGES.map(([s, label]) => ({ value: s, label }))} />
      </div>
      <ErrorBox error={res.error} />
      {!data && !res.error && <Loading />}
      {data && (
        <p class="w-muted w-small">
          {data.interval_s === null
            ? "This process does not set WURK[\"RETAIN_HISTORY\"]; the snapshots shown were taken by workers that do."
            : `The leading worker takes a snapshot every ${data.interval_s} s.`}
        </p>
      )}
      {data && data.items.length === 0 && <Off />}
      {data && data.items.length > 0 && <Latest data={data} />}
      {data && x.length >= 2 && <Rates data={data} x={x} />}
      {data && x.length >= 2 && <Levels data={data} x={x} />}
    </div>
  );
}
