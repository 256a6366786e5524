// One queue: its size and latency (`queues/<q>`), its jobs, paged, newest first or
// oldest first, with per-row delete behind a confirmation.

import { api, type QueueJob } from "../api";
import { describe, run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Pager, SearchForm, Segmented, Time } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { intParam, setQuery } from "../router";
import { session } from "../session";
import { queueActions } from "./Queues";

function jobName(job: QueueJob): string {
  return `${job.display_class ?? "job"} ${job.jid ?? ""}`.trim();
}

export default function Queue(props: { params: string[]; query: URLSearchParams }) {
  const name = props.params[0];
  const page = intParam(props.query, "page", 1);
  const direction = props.query.get("direction") === "asc" ? "asc" : "desc";
  const q = props.query.get("q") || "";
  const info = useResource(() => api.queue(name), `queue-${name}`);
  const res = useResource(() => api.queueJobs(name, { page, direction, q }), `queue-${name}-${page}-${direction}-${q}`);
  const items = res.data?.items ?? [];
  const queue = info.data;
  const actions = queue ? queueActions(queue) : null;
  const remove = (job: QueueJob) => run(() => api.deleteQueueJobs(name, [job.raw]), {
    confirm: { title: `Delete ${jobName(job)}?`, body: `It leaves queue ${name} and will not run. It cannot be undone.`, confirm: "Delete", danger: true },
    done: (r) => describe(r, "Deleted"),
  });
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="queues">Queues</Link> ›</p>
      <div class="w-panel-head">
        <h1>Queue {name} {queue?.paused && <Badge kind="warning">paused</Badge>}</h1>
        {session.canAct && queue && actions && (
          <div class="w-actions">
            <button type="button" class="w-btn" onClick={actions.pause}>{queue.paused ? "Resume" : "Pause"}</button>
            <button type="button" class="w-btn w-btn-danger" onClick={actions.clear}>Clear</button>
          </div>
        )}
      </div>
      <ErrorBox error={info.error} />
      {queue && (
        <dl class="w-facts w-facts-row">
          <div><dt>Size</dt><dd>{formatNumber(queue.size)}</dd></div>
          <div><dt>Latency</dt><dd>{formatDuration(queue.latency)}</dd></div>
        </dl>
      )}
      <div class="w-toolbar">
        <SearchForm value={q} placeholder="Search jobs (class, jid or argument text)" />
        <Segmented label="Order" value={direction} onChange={(d) => setQuery({ direction: d === "asc" ? "asc" : "", page: "" })}
          options={[{ value: "desc", label: "Newest first" }, { value: "asc", label: "Oldest first" }]} />
      </div>
      {info.error?.message !== res.error?.message && <ErrorBox error={res.error} />}
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>{q ? "No job in this queue matches." : "This queue is empty."}</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table w-stack" data-table="queue-jobs">
            <thead><tr><th>Class</th><th>JID</th><th>Arguments</th><th>Enqueued</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>
              {items.map((job, i) => (
                <tr key={`${job.jid}-${i}`} data-jid={job.jid ?? ""}>
                  <td data-label="Class">{job.display_class ?? ""}</td>
                  <td data-label="JID" class="w-mono">{job.jid ?? ""}</td>
                  <td data-label="Arguments"><code class="w-args">{job.args_preview}</code></td>
                  <td data-label="Enqueued"><Time ms={job.enqueued_at_ms} rel /></td>
                  {session.canAct && (
                    <td class="w-actions"><button type="button" class="w-btn w-btn-small w-btn-danger" data-action="delete" onClick={() => remove(job)}>Delete</button></td>
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
