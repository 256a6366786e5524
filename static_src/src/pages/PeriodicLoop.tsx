// One periodic loop: its options and the last 25 fires.

import { api } from "../api";
import { Badge, Empty, ErrorBox, Link, Loading, Pre } from "../components/ui";
import { useResource } from "../hooks";
import { session } from "../session";
import { LoopTime, loopActions } from "./Periodic";

export default function PeriodicLoop(props: { params: string[] }) {
  const lid = props.params[0];
  const res = useResource(() => api.loop(lid), `loop-${lid}`);
  const loop = res.data;
  const actions = loop ? loopActions(loop) : null;
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="periodic">Periodic jobs</Link> ›</p>
      {res.error?.status === 404 ? <Empty>No periodic job has this id.</Empty> : <ErrorBox error={res.error} />}
      {!loop && !res.error && <Loading />}
      {loop && actions && (
        <>
          <div class="w-panel-head">
            <h1>{loop.class} {loop.paused && <Badge kind="warning">paused</Badge>}</h1>
            {session.canAct && (
              <div class="w-actions">
                <button type="button" class="w-btn" onClick={actions.toggle}>{loop.paused ? "Resume" : "Pause"}</button>
                <button type="button" class="w-btn" onClick={actions.fire}>Run now</button>
              </div>
            )}
          </div>
          <table class="w-table w-detail">
            <tbody>
              <tr><th scope="row">Schedule</th><td><code>{loop.schedule}</code></td></tr>
              <tr><th scope="row">Time zone</th><td>{loop.tz}</td></tr>
              <tr><th scope="row">Queue</th><td>{loop.queue ?? "default"}</td></tr>
              <tr><th scope="row">Arguments</th><td><Pre text={loop.args_preview} truncated={loop.args_truncated} /></td></tr>
              {Object.keys(loop.options).length > 0 && (
                <tr><th scope="row">Options</th><td>
                  <dl class="w-options">{Object.entries(loop.options).map(([k, v]) => <div key={k}><dt>{k}</dt><dd class="w-mono">{v}</dd></div>)}</dl>
                </td></tr>
              )}
              <tr><th scope="row">Next run</th><td data-cell="next"><LoopTime ms={loop.next_fire_at_ms} tz={loop.tz} due /></td></tr>
              <tr><th scope="row">Last run</th><td data-cell="last"><LoopTime ms={loop.last_fired_at_ms} tz={loop.tz} /></td></tr>
            </tbody>
          </table>
          <section class="w-panel">
            <h2>Last fires</h2>
            {loop.history.length === 0 ? <Empty>This job has not fired yet.</Empty> : (
              <table class="w-table" data-table="loop-history">
                <thead><tr><th>Time</th><th>JID</th></tr></thead>
                <tbody>
                  {loop.history.map((h, i) => (
                    <tr key={i}><td><LoopTime ms={h.fired_at_ms} tz={loop.tz} /></td><td class="w-mono">{h.jid}</td></tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
    </div>
  );
}
