// One batch: its progress, counts and times, the jobs failing or dead (linked to their
// entries in the retry and dead sets), its callbacks and whether each has fired, its
// parent and children; invalidate and delete for users who may change things.

import { api, type BatchDetail } from "../api";
import { plural, run } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Time } from "../components/ui";
import { formatDuration, formatNumber } from "../format";
import { useResource } from "../hooks";
import { navigate, href } from "../router";
import { session } from "../session";
import { BatchRows, ProgressBar, StateBadges } from "./Batches";

function JidList(props: { title: string; set: "retries" | "dead"; items: string[]; total: number; name: string }) {
  if (props.total === 0) return null;
  return (
    <section class="w-panel" data-section={props.name}>
      <h2>{props.title} <span class="w-muted">({formatNumber(props.total)})</span></h2>
      <ul class="w-jids">
        {props.items.map((jid) => (
          <li key={jid}><Link to={props.set} query={{ q: jid }} class="w-mono" title={`Find it in ${props.set}`}>{jid}</Link></li>
        ))}
      </ul>
      {props.total > props.items.length && (
        <p class="w-muted w-small">The first {formatNumber(props.items.length)} are listed.</p>
      )}
    </section>
  );
}

function Callbacks(props: { batch: BatchDetail }) {
  const { callbacks } = props.batch;
  return (
    <section class="w-panel" data-section="callbacks">
      <h2>Callbacks</h2>
      {callbacks.length === 0 ? <p class="w-muted">None registered.</p> : (
        <table class="w-table" data-table="callbacks">
          <thead><tr><th>Event</th><th>Target</th><th>Options</th><th>Fired</th></tr></thead>
          <tbody>
            {callbacks.map((callback, i) => (
              <tr key={i} data-callback={callback.event}>
                <td>{callback.event}</td>
                <td class="w-mono">{callback.target}</td>
                <td class="w-mono">{callback.options}</td>
                <td data-fired={String(callback.fired)}>{callback.fired ? <Badge>fired</Badge> : <span class="w-muted">not yet</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Facts(props: { batch: BatchDetail }) {
  const { batch } = props;
  const facts: [string, string, preact.ComponentChildren][] = [
    ["total", "Jobs", formatNumber(batch.total)],
    ["done", "Succeeded", formatNumber(batch.done)],
    ["pending", "Pending", formatNumber(batch.pending)],
    ["failures", "Failing", formatNumber(batch.failures)],
    ["live", "Not run yet", formatNumber(batch.live)],
    ["children", "Child batches", formatNumber(batch.children.total)],
  ];
  return (
    <dl class="w-facts w-facts-row" data-facts="batch">
      {facts.map(([key, label, value]) => <div key={key} data-fact={key}><dt>{label}</dt><dd>{value}</dd></div>)}
    </dl>
  );
}

function Details(props: { batch: BatchDetail }) {
  const { batch } = props;
  return (
    <table class="w-table w-detail">
      <tbody>
        <tr><th scope="row">Progress</th><td data-cell="progress"><ProgressBar row={batch} /></td></tr>
        <tr><th scope="row">State</th><td><StateBadges row={batch} /></td></tr>
        <tr><th scope="row">Created</th><td><Time ms={batch.created_at_ms} /></td></tr>
        <tr><th scope="row">Complete</th><td><Time ms={batch.complete_at_ms} /></td></tr>
        <tr><th scope="row">Succeeded</th><td><Time ms={batch.success_at_ms} /></td></tr>
        {batch.dead && <tr><th scope="row">Died</th><td><Time ms={batch.death_at_ms} /></td></tr>}
        <tr><th scope="row">Parent</th><td data-cell="parent">{batch.parent
          ? <Link to={`batches/${encodeURIComponent(batch.parent.bid)}`}>{batch.parent.description || batch.parent.bid}</Link>
          : <span class="w-muted">—</span>}</td></tr>
        <tr><th scope="row">Callback queue</th><td class="w-mono">{batch.callback_queue}</td></tr>
        {batch.callback_class && <tr><th scope="row">Callback class</th><td class="w-mono">{batch.callback_class}</td></tr>}
        {batch.tags.length > 0 && <tr><th scope="row">Tags</th><td><div class="w-badges">{batch.tags.map((tag) => (
          <Link key={tag} to="batches" query={{ tag }} class="w-badge">{tag}</Link>))}</div></td></tr>}
        <tr><th scope="row">Kept after success</th><td>{formatDuration(batch.linger_s ?? 86400)}</td></tr>
      </tbody>
    </table>
  );
}

export default function Batch(props: { params: string[] }) {
  const bid = props.params[0];
  const res = useResource(() => api.batch(bid), `batch-${bid}`);
  const batch = res.data;
  const invalidate = () => run(() => api.invalidateBatch(bid), {
    confirm: {
      title: "Invalidate this batch?",
      body: "Its jobs and those of the batches below it that have not run yet are skipped (counted as done); running jobs can check valid_within_batch(). It cannot be undone.",
      confirm: "Invalidate", danger: true,
    },
    done: (result) => `Invalidated ${plural(result.invalidated, "batch", "batches")}.`,
  });
  const remove = async () => {
    const result = await run(() => api.deleteBatch(bid), {
      confirm: {
        title: "Delete this batch?",
        body: "Its record goes now; jobs still queued or running stay and are no longer counted, and its callbacks will not fire.",
        confirm: "Delete", danger: true,
      },
      done: () => "Batch deleted.",
    });
    if (result) navigate(href("batches"));
  };
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to="batches">Batches</Link> ›</p>
      {res.error?.status === 404 ? <Empty>No batch has this id: it finished and expired, or never existed.</Empty> : <ErrorBox error={res.error} />}
      {!batch && !res.error && <Loading />}
      {batch && (
        <>
          <div class="w-panel-head">
            <h1>{batch.description || "Batch"} <span class="w-muted w-mono w-small">{batch.bid}</span></h1>
            {session.canAct && (
              <div class="w-actions">
                <button type="button" class="w-btn" data-action="invalidate" disabled={batch.invalidated} onClick={invalidate}>Invalidate</button>
                <button type="button" class="w-btn w-btn-danger" data-action="delete" onClick={remove}>Delete</button>
              </div>
            )}
          </div>
          <Facts batch={batch} />
          <Details batch={batch} />
          <JidList title="Failing jobs" set="retries" items={batch.failed.items} total={batch.failed.total} name="failed" />
          <JidList title="Dead jobs" set="dead" items={batch.dead_jids.items} total={batch.dead_jids.total} name="dead" />
          <Callbacks batch={batch} />
          {batch.children.total > 0 && (
            <section class="w-panel" data-section="children">
              <h2>Child batches <span class="w-muted">({formatNumber(batch.children.total)}, {formatNumber(batch.pending_children)} not complete)</span></h2>
              <BatchRows items={batch.children.items} />
              {batch.children.total > batch.children.items.length && (
                <p class="w-muted w-small">The first {formatNumber(batch.children.items.length)} are listed.</p>
              )}
            </section>
          )}
        </>
      )}
    </div>
  );
}
