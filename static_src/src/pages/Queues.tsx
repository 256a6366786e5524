// Queues: size, latency, paused; pause/resume and clear (dashboard.md §1.3).

import { api, itemsOf, type Json } from "../api";
import { plural, run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { session } from "../session";

export function queueActions(q: Json) {
  const name = String(q.name);
  const pause = () => run(() => api.pauseQueue(name, !q.paused), {
    done: () => `Queue ${name} ${q.paused ? "resumed" : "paused"}.`,
  });
  const clear = () => run(() => api.clearQueue(name), {
    confirm: { title: `Clear queue ${name}?`, body: `This deletes all ${plural(q.size, "job")} waiting in ${name}. It cannot be undone.`, confirm: "Clear queue", danger: true },
    done: () => `Queue ${name} cleared.`,
  });
  return { pause, clear };
}

function QueueRow(props: { q: Json }) {
  const { q } = props;
  const { pause, clear } = queueActions(q);
  return (
    <tr data-queue={String(q.name)}>
      <td><Link to={`queues/${encodeURIComponent(q.name)}`} class="w-strong">{String(q.name)}</Link>
        {q.paused && <> <Badge kind="warning">paused</Badge></>}</td>
      <td class="w-num">{formatNumber(q.size)}</td>
      <td class="w-num">{formatDuration(q.latency ?? q.latency_s)}</td>
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
  const items = itemsOf(res.data);
  return (
    <div class="w-page">
      <h1>Queues</h1>
      <ErrorBox error={res.error} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>No queue exists yet: queues appear when a job is pushed to them.</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="queues">
            <thead><tr><th>Queue</th><th class="w-num">Size</th><th class="w-num">Latency</th>
              {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>{items.map((q) => <QueueRow key={q.name} q={q} />)}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}
