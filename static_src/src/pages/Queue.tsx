// One queue: its jobs, paged, newest first or oldest first, with per-row delete.

import { api, itemsOf, type Json } from "../api";
import { describe, run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Pager, SearchForm, Segmented, Time } from "../components/ui";
import { formatDuration, formatNumber, toMs } from "../format";
import { useResource } from "../hooks";
import { intParam, setQuery } from "../router";
import { session } from "../session";
import { queueActions } from "./Queues";

export default function Queue(props: { params: string[]; query: URLSearchParams }) {
  const name = props.params[0];
  const page = intParam(props.query, "page", 1);
  const direction = props.query.get("direction") === "asc" ? "asc" : "desc";
  const q = props.query.get("q") || "";
  const info = useResource(() => api.queues(), "queues");
  const queue: Json = itemsOf(info.data).find((x) => x.name === name) || { name, size: 0 };
  const res = useResource(() => api.queueJobs(name, { page, direction, q }), `queue-${name}-${page}-${direction}-${q}`);
  const items = itemsOf(res.data);
  const { pause, clear } = queueActions(queue);
  const remove = (job: Json) => run(() => api.deleteQueueJobs(name, [job.raw]), {
    done: (r) => describe(r, "Deleted"),
  });
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="queues">Queues</Link> ›</p>
      <div class="w-panel-head">
        <h1>Queue {name} {queue.paused && <Badge kind="warning">paused</Badge>}</h1>
        {session.canAct && (
          <div class="w-actions">
            <button type="button" class="w-btn" onClick={pause}>{queue.paused ? "Resume" : "Pause"}</button>
            <button type="button" class="w-btn w-btn-danger" onClick={clear}>Clear</button>
          </div>
        )}
      </div>
      <dl class="w-facts w-facts-row">
        <div><dt>Size</dt><dd>{formatNumber(queue.size)}</dd></div>
        <div><dt>Latency</dt><dd>{formatDuration(queue.latency ?? queue.latency_s)}</dd></div>
      </dl>
      <div class="w-toolbar">
        <SearchForm value={q} placeholder="Search jobs (class, jid or argument text)" />
        <Segmented label="Order" value={direction} onChange={(d) => setQuery({ direction: d === "asc" ? "asc" : "", page: "" })}
          options={[{ value: "desc", label: "Newest first" }, { value: "asc", label: "Oldest first" }]} />
      </div>
      <ErrorBox error={res.error} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>{q ? "No job in this queue matches." : "This queue is empty."}</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="queue-jobs">
            <thead><tr><th>Class</th><th>JID</th><th>Arguments</th><th>Enqueued</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>
              {items.map((job, i) => (
                <tr key={`${job.jid}-${i}`}>
                  <td>{String(job.display_class ?? job.class ?? "")}</td>
                  <td class="w-mono">{String(job.jid ?? "")}</td>
                  <td><code class="w-args">{String(job.args_preview ?? "")}</code></td>
                  <td><Time ms={toMs(job.enqueued_at_ms)} rel /></td>
                  {session.canAct && (
                    <td class="w-actions"><button type="button" class="w-btn w-btn-small w-btn-danger" onClick={() => remove(job)}>Delete</button></td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {res.data && <Pager page={res.data.page} pages={res.data.pages} />}
    </div>
  );
}
