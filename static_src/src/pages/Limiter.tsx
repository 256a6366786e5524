// One rate limiter: its options, its use against its limit, its metrics, and reset
// (behind a confirmation, for users who may change things).

import { api, type LimiterMetrics } from "../api";
import { run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Time } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";
import { LIMIT_WORDS, UsageBar } from "./Limiters";

const METRICS: [keyof LimiterMetrics, string, "count" | "seconds"][] = [
  ["held", "Held", "count"],
  ["held_time_s", "Held time", "seconds"],
  ["immediate", "Immediate", "count"],
  ["waited", "Waited", "count"],
  ["wait_time_s", "Wait time", "seconds"],
  ["overages", "Overages", "count"],
  ["reclaimed", "Reclaimed", "count"],
  ["reschedules", "Reschedules", "count"],
];

export default function Limiter(props: { params: string[] }) {
  const name = props.params[0];
  const res = useResource(() => api.limiter(name), `limiter-${name}`);
  const limiter = res.data;
  const reset = () => run(() => api.resetLimiter(name), {
    confirm: {
      title: `Reset limiter ${name}?`,
      body: "Its state and metrics are cleared: calls in progress lose their slots, so for a while more calls than the limit may run. It cannot be undone.",
      confirm: "Reset", danger: true,
    },
    done: () => `Limiter ${name} reset.`,
  });
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="limiters">Rate limiters</Link> ›</p>
      {res.error?.status === 404 ? <Empty>No rate limiter has this name (its data may have expired).</Empty> : <ErrorBox error={res.error} />}
      {!limiter && !res.error && <Loading />}
      {limiter && (
        <>
          <div class="w-panel-head">
            <h1>{limiter.name} <Badge>{limiter.type}</Badge></h1>
            {session.canAct && (
              <div class="w-actions"><button type="button" class="w-btn w-btn-danger" data-action="reset" onClick={reset}>Reset</button></div>
            )}
          </div>
          <table class="w-table w-detail">
            <tbody>
              <tr><th scope="row">In use</th><td data-cell="usage"><UsageBar item={limiter} />
                {limiter.limit !== null && <div class="w-small w-muted">{LIMIT_WORDS[limiter.type] ?? ""}</div>}</td></tr>
              <tr><th scope="row">Frees</th><td><Time ms={limiter.reset_at_ms} rel due /></td></tr>
              {Object.keys(limiter.options).length > 0 && (
                <tr><th scope="row">Options</th><td>
                  <dl class="w-options">{Object.entries(limiter.options).map(([k, v]) => <div key={k}><dt>{k}</dt><dd class="w-mono">{v}</dd></div>)}</dl>
                </td></tr>
              )}
              <tr><th scope="row">Expires</th><td>{limiter.ttl_s === null ? "—" : `in ${formatDuration(limiter.ttl_s)} unless used again`}</td></tr>
            </tbody>
          </table>
          <section class="w-panel">
            <h2>Metrics</h2>
            <dl class="w-facts w-facts-row" data-metrics="limiter">
              {METRICS.map(([key, label, kind]) => (
                <div key={key} data-metric={key}><dt>{label}</dt>
                  <dd>{kind === "seconds" ? formatDuration(limiter.metrics[key]) : formatNumber(limiter.metrics[key])}</dd></div>
              ))}
            </dl>
          </section>
        </>
      )}
    </div>
  );
}
