// Overview: realtime processed/failed differences, daily history with deploy marks,
// and the Redis panel.

import { api } from "../api";
import { Chart, chartMarks } from "../components/Chart";
import { ErrorBox, Loading, Segmented } from "../components/ui";
import { formatNumber, formatTime } from "../format";
import { plural } from "../actions";
import { useResource } from "../hooks";
import { usePoll } from "../poll";
import { intParam, setQuery } from "../router";
import { realtime, useStats } from "../stats";
import type { RedisInfo } from "../api";

const DAYS = [7, 30, 90, 180];
const SERIES = [
  { label: "Processed", color: "--w-processed", fill: true },
  { label: "Failed", color: "--w-failed", fill: true },
];

function Realtime() {
  useStats(); // re-render after each poll
  const { intervalS } = usePoll();
  const ready = realtime.t.length >= 2; // one point gives uPlot no time range to draw
  return (
    <section class="w-panel">
      <h2>Realtime <span class="w-muted w-small">jobs per poll{intervalS ? `, every ${intervalS} s` : ", paused"}</span></h2>
      {!ready && <p class="w-muted w-small">Collecting: the chart starts after two polls.</p>}
      <Chart label="Processed and failed jobs between polls" x={ready ? [...realtime.t] : []}
        series={[{ spec: SERIES[0], values: ready ? [...realtime.processed] : [] },
          { spec: SERIES[1], values: ready ? [...realtime.failed] : [] }]} />
    </section>
  );
}

function dayStart(day: string): number {
  return Date.parse(day + "T00:00:00Z") / 1000;
}

function History(props: { days: number }) {
  const { days } = props;
  const history = useResource(() => api.history(days), `history-${days}`, false);
  const data = history.data;
  const dates = data ? Object.keys(data.processed).sort() : [];
  const marks = data ? chartMarks(data.marks) : [];
  return (
    <section class="w-panel">
      <div class="w-panel-head">
        <h2>History</h2>
        <Segmented label="History range" value={days} onChange={(d) => setQuery({ days: d === 30 ? "" : d }, true)}
          options={DAYS.map((d) => ({ value: d, label: `${d} days` }))} />
      </div>
      <ErrorBox error={history.error} />
      {!data && !history.error && <Loading />}
      {data && (
        <Chart label={`Processed and failed jobs per day, last ${days} days`} dayTicks
          x={dates.map(dayStart)} marks={marks.map((m) => ({ ...m, t: Math.floor(m.t / 86400) * 86400 }))}
          series={[
            { spec: SERIES[0], values: dates.map((d) => data.processed[d] ?? 0) },
            { spec: SERIES[1], values: dates.map((d) => data.failed[d] ?? 0) },
          ]} />
      )}
      {marks.length > 0 && (
        <ul class="w-marks" aria-label="Deploy marks">
          {marks.slice(-10).map((m) => <li key={`${m.t}-${m.label}`}><span class="w-mark-dot" /> {formatTime(m.t * 1000)}: {m.label}</li>)}
        </ul>
      )}
    </section>
  );
}

const REDIS_FIELDS: [keyof RedisInfo, string][] = [
  ["redis_version", "Version"],
  ["uptime_in_days", "Uptime (days)"],
  ["connected_clients", "Connections"],
  ["used_memory_human", "Memory usage"],
  ["used_memory_peak_human", "Peak memory usage"],
];

function RedisPanel() {
  const { stats } = useStats();
  const redis = stats?.redis;
  return (
    <section class="w-panel" aria-label="Redis">
      <h2>Redis</h2>
      {!redis && <p class="w-muted">Loading…</p>}
      {redis && (
        <dl class="w-facts w-facts-row">
          {REDIS_FIELDS.filter(([key]) => key !== "redis_version" || !redis.valkey_version).map(([key, label]) => (
            <div key={key}><dt>{label}</dt><dd>{String(redis[key])}</dd></div>
          ))}
          {redis.valkey_version && <div><dt>Valkey</dt><dd>{redis.valkey_version}</dd></div>}
          <div><dt>Server time</dt><dd>{formatTime(redis.server_time_ms, "utc")}</dd></div>
        </dl>
      )}
    </section>
  );
}

function Summary() {
  const { stats, error } = useStats();
  if (error) return <ErrorBox error={error} />;
  if (!stats) return null;
  return (
    <p class="w-summary">
      {stats.processes === null ? "An unknown number of processes" : plural(stats.processes, "process", "processes")},{" "}
      {plural(stats.busy, "job")} running, {formatNumber(stats.enqueued)} waiting in queues.
    </p>
  );
}

export default function Overview(props: { query: URLSearchParams }) {
  const days = DAYS.includes(intParam(props.query, "days", 30)) ? intParam(props.query, "days", 30) : 30;
  return (
    <div class="w-page">
      <h1>Overview</h1>
      <Summary />
      <Realtime />
      <History days={days} />
      <RedisPanel />
    </div>
  );
}
