// One periodic loop: its options and the last 25 fires.

import { api, itemsOf, type Json } from "../api";
import { Badge, Empty, ErrorBox, Link, Loading, Pre } from "../components/ui";
import { toMs } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";
import { LoopTime, lastFire, loopActions, loopClass, nextFire } from "./Periodic";

export default function PeriodicLoop(props: { params: string[] }) {
  const lid = props.params[0];
  const res = useResource(() => api.loop(lid), `loop-${lid}`);
  const loop = (res.data?.loop ?? res.data) as Json | undefined;
  const history = itemsOf(res.data, "history");
  const actions = loop ? loopActions({ lid, ...loop }) : null;
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="periodic">Periodic jobs</Link> ›</p>
      {res.error?.status === 404 ? <Empty>No periodic job has this id.</Empty> : <ErrorBox error={res.error} />}
      {!loop && !res.error && <Loading />}
      {loop && actions && (
        <>
          <div class="w-panel-head">
            <h1>{loopClass(loop)} {loop.paused && <Badge kind="warning">paused</Badge>}</h1>
            {session.canAct && (
              <div class="w-actions">
                <button type="button" class="w-btn" onClick={actions.toggle}>{loop.paused ? "Resume" : "Pause"}</button>
                <button type="button" class="w-btn" onClick={actions.fire}>Run now</button>
              </div>
            )}
          </div>
          <table class="w-table w-detail">
            <tbody>
              <tr><th scope="row">Schedule</th><td><code>{String(loop.schedule ?? loop.cron ?? "")}</code> {loop.description && <span>{String(loop.description)}</span>}</td></tr>
              <tr><th scope="row">Time zone</th><td>{String(loop.tz ?? "UTC")}</td></tr>
              <tr><th scope="row">Queue</th><td>{String(loop.queue ?? "default")}</td></tr>
              <tr><th scope="row">Arguments</th><td><Pre text={loop.args !== undefined ? JSON.stringify(loop.args, null, 2) : String(loop.args_preview ?? "[]")} /></td></tr>
              {loop.options && Object.keys(loop.options).length > 0 && (
                <tr><th scope="row">Options</th><td>
                  <dl class="w-options">{Object.entries(loop.options as Json).map(([k, v]) => <div key={k}><dt>{k}</dt><dd class="w-mono">{typeof v === "string" ? v : JSON.stringify(v)}</dd></div>)}</dl>
                </td></tr>
              )}
              <tr><th scope="row">Next run</th><td><LoopTime ms={loop.paused ? null : nextFire(loop)} tz={loop.tz} /></td></tr>
              <tr><th scope="row">Last run</th><td><LoopTime ms={lastFire(loop)} tz={loop.tz} /></td></tr>
            </tbody>
          </table>
          <section class="w-panel">
            <h2>Last fires</h2>
            {history.length === 0 ? <Empty>This job has not fired yet.</Empty> : (
              <table class="w-table" data-table="loop-history">
                <thead><tr><th>Time</th><th>JID</th></tr></thead>
                <tbody>
                  {history.map((h, i) => (
                    <tr key={i}><td><LoopTime ms={toMs(h.fired_at_ms ?? h.at_ms ?? h.at)} tz={loop.tz} /></td><td class="w-mono">{String(h.jid ?? "")}</td></tr>
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
