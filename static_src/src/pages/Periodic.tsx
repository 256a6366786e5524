// Periodic jobs (cron loops): schedule, next and last fire, pause/resume, run now (§1.8).

import { api, itemsOf, type Json } from "../api";
import { run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Time } from "../components/ui";
import { formatTime, toMs } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";

export function loopId(loop: Json): string {
  return String(loop.lid ?? loop.id ?? "");
}

export function loopClass(loop: Json): string {
  return String(loop.display_class ?? loop.class ?? loop.klass ?? "");
}

export const lastFire = (loop: Json) => toMs(loop.last_fired_at_ms ?? loop.last_fire_ms ?? loop.lf);
export const nextFire = (loop: Json) => toMs(loop.next_fire_at_ms ?? loop.next_fire_ms ?? loop.nf);

export function loopActions(loop: Json) {
  const lid = loopId(loop);
  const name = loopClass(loop);
  return {
    toggle: () => run(() => api.loopAction(lid, loop.paused ? "resume" : "pause"), {
      done: () => `${name} ${loop.paused ? "resumed" : "paused"}.`,
    }),
    fire: () => run(() => api.loopAction(lid, "run"), {
      done: (r) => `${name} pushed${r.jid ? ` as ${String(r.jid)}` : ""}.`,
    }),
  };
}

/** A time in the loop's own zone (when it has one) and in UTC. */
export function LoopTime(props: { ms: number | null; tz?: string }) {
  const { ms, tz } = props;
  if (ms === null) return <span class="w-muted">—</span>;
  let zoned = "";
  if (tz && tz !== "UTC") {
    try {
      zoned = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, dateStyle: "short", timeStyle: "medium" }).format(new Date(ms)) + " " + tz;
    } catch { zoned = ""; }
  }
  return (
    <span class="w-times">
      {zoned && <span>{zoned}</span>}
      <span>{formatTime(ms, "utc")}</span>
      <span class="w-muted"><Time ms={ms} rel /></span>
    </span>
  );
}

function LoopRow(props: { loop: Json }) {
  const { loop } = props;
  const { toggle, fire } = loopActions(loop);
  return (
    <tr data-loop={loopId(loop)}>
      <td>
        <Link to={`periodic/${encodeURIComponent(loopId(loop))}`} class="w-strong">{loopClass(loop)}</Link>
        {loop.paused && <> <Badge kind="warning">paused</Badge></>}
        <div class="w-small w-muted">queue {String(loop.queue ?? "default")}</div>
      </td>
      <td><code>{String(loop.schedule ?? loop.cron ?? "")}</code>
        {loop.description && <div class="w-small">{String(loop.description)}</div>}
        {loop.tz && <div class="w-small w-muted">{String(loop.tz)}</div>}</td>
      <td><code class="w-args">{String(loop.args_preview ?? (loop.args === undefined ? "" : JSON.stringify(loop.args)))}</code></td>
      <td><LoopTime ms={loop.paused ? null : nextFire(loop)} tz={loop.tz} /></td>
      <td><LoopTime ms={lastFire(loop)} tz={loop.tz} /></td>
      {session.canAct && (
        <td class="w-actions">
          <button type="button" class="w-btn w-btn-small" onClick={toggle}>{loop.paused ? "Resume" : "Pause"}</button>
          <button type="button" class="w-btn w-btn-small" onClick={fire}>Run now</button>
        </td>
      )}
    </tr>
  );
}

export default function Periodic() {
  const res = useResource(() => api.periodic(), "periodic");
  const data = res.data as Json | undefined;
  const loops = itemsOf(data);
  const nowMs = toMs(data?.now_ms ?? data?.server_time_ms);
  return (
    <div class="w-page">
      <h1>Periodic jobs</h1>
      {nowMs && <p class="w-muted w-small">Server time: {formatTime(nowMs, "utc")}</p>}
      <ErrorBox error={res.error} />
      {!data && !res.error && <Loading />}
      {data && loops.length === 0 && <Empty>No periodic job is registered. Add entries to <code>WURK["CRON"]</code> and start a worker.</Empty>}
      {loops.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="periodic">
            <thead><tr><th>Job</th><th>Schedule</th><th>Arguments</th><th>Next run</th><th>Last run</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>{loops.map((loop) => <LoopRow key={loopId(loop)} loop={loop} />)}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}

