// Periodic jobs (cron loops): schedule, next and last fire, pause/resume, run now.

import { api, type Loop } from "../api";
import { run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Problems, Time } from "../components/ui";
import { formatTime } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";

export function loopActions(loop: Loop) {
  const { lid, class: name } = loop;
  return {
    toggle: () => run(() => api.loopAction(lid, loop.paused ? "resume" : "pause"), {
      done: () => `${name} ${loop.paused ? "resumed" : "paused"}.`,
    }),
    fire: () => run(() => api.runLoop(lid), { done: (r) => `${name} pushed as ${r.jid}.` }),
  };
}

/** `2025-03-01 10:05:00` as the wall clock in `tz` shows it, or "" for an unknown zone. */
function inZone(ms: number, tz: string): string {
  try {
    return new Intl.DateTimeFormat("sv-SE", { timeZone: tz, dateStyle: "short", timeStyle: "medium" }).format(new Date(ms));
  } catch {
    return "";
  }
}

/** A time in the loop's own zone and in UTC: one line when the two read the same.
 * `due`: the next run, which reads "due now" once passed (see `relative`). */
export function LoopTime(props: { ms: number | null; tz: string; due?: boolean }) {
  const { ms, tz } = props;
  if (ms === null) return <span class="w-muted">—</span>;
  const zoned = inZone(ms, tz);
  const utc = formatTime(ms, "utc");
  const same = zoned === "" || utc.startsWith(zoned);
  return (
    <span class="w-times">
      {!same && <span>{zoned} {tz}</span>}
      <span>{utc}</span>
      <span class="w-muted"><Time ms={ms} rel due={props.due} /></span>
    </span>
  );
}

function LoopRow(props: { loop: Loop }) {
  const { loop } = props;
  const { toggle, fire } = loopActions(loop);
  return (
    <tr data-loop={loop.lid}>
      <td>
        <Link to={`periodic/${encodeURIComponent(loop.lid)}`} class="w-strong">{loop.class}</Link>
        {loop.paused && <> <Badge kind="warning">paused</Badge></>}
        <div class="w-small w-muted">queue {loop.queue ?? "default"}</div>
      </td>
      <td><code>{loop.schedule}</code>
        <div class="w-small w-muted">{loop.tz}</div></td>
      <td><code class="w-args">{loop.args_preview}</code></td>
      <td data-cell="next"><LoopTime ms={loop.next_fire_at_ms} tz={loop.tz} due /></td>
      <td data-cell="last"><LoopTime ms={loop.last_fired_at_ms} tz={loop.tz} /></td>
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
  const data = res.data;
  const loops = data?.items ?? [];
  return (
    <div class="w-page">
      <h1>Periodic jobs</h1>
      {data && <p class="w-muted w-small">Server time: {formatTime(data.server_time_ms, "utc")}</p>}
      <ErrorBox error={res.error} />
      <Problems problems={data?.problems} />
      {!data && !res.error && <Loading />}
      {data && loops.length === 0 && <Empty>No periodic job is registered. Add entries to <code>WURK["CRON"]</code> and start a worker.</Empty>}
      {loops.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="periodic">
            <thead><tr><th>Job</th><th>Schedule</th><th>Arguments</th><th>Next run</th><th>Last run</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>{loops.map((loop) => <LoopRow key={loop.lid} loop={loop} />)}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}

