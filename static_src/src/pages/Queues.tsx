// Queues: size, latency, paused; pause/resume and clear. A queue whose key holds the
// wrong type is one row with its size unknown and the reason, not a broken page.

import { api, type QueueInfo, type QueueItem } from "../api";
import { plural, run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";

export function queueActions(q: QueueItem | QueueInfo) {
  const { name } = q;
  const pause = () => run(() => api.pauseQueue(name, !q.paused), {
    done: () => `Queue ${name} ${q.paused ? "resumed" : "paused"}.`,
  });
  const jobs = q.size === null ? "every job" : `all ${plural(q.size, "job")}`;
  const clear = () => run(() => api.clearQueue(name), {
    confirm: { title: `Clear queue ${name}?`, body: `This deletes ${jobs} waiting in ${name}. It cannot be undone.`, confirm: "Clear queue", danger: true },
    done: () => `Queue ${name} cleared.`,
  });
  return { pause, clear };
}

function QueueRow(props: { q: QueueItem }) {
  const { q } = props;
  const { pause, clear } = queueActions(q);
  return (
    <tr data-queue={q.name}>
      <td data-label="Queue"><Link to={`queues/${encodeURIComponent(q.name)}`} class="w-strong">{q.name}</Link>
        {q.paused && <> <Badge kind="warning">paused</Badge></>}
        {q.error && <div class="w-small w-error-note" data-error="queue">Size unknown: {q.error}</div>}</td>
      <td data-label="Size" class="w-num">{q.size === null ? "unknown" : formatNumber(q.size)}</td>
      <td data-label="Latency" class="w-num">{formatDuration(q.latency)}</td>
      {session.canAct && (
        <td class="w-actions">
          <button type="button" class="w-btn w-btn-small" onClick={pause}>{q.paused ? "Resume" : "Pause"}</button>
          <button type="button" class="w-btn w-btn-small w-btn-danger" onClick={clear}>Clear</button>
        </td>
      )}
    </tr>
  );
}

export default function Queues() {
  const res = useResource(() => api.queues(), "queues");
  const items = res.data?.items ?? [];
  return (
    <div class="w-page">
      <h1>Queues</h1>
      <ErrorBox error={res.error} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>No queue exists yet: queues appear when a job is pushed to them.</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table w-stack" data-table="queues">
            <thead><tr><th>Queue</th><th class="w-num">Size</th><th class="w-num">Latency</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>{items.map((q) => <QueueRow key={q.name} q={q} />)}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}
