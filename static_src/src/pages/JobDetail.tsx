// One job of a sorted set: everything in its payload, decoded, plus the set's actions.

import type { ComponentChildren } from "preact";
import { api, type JobDetail as Job, type SetName } from "../api";
import { run } from "../actions";
import { Badge, BothTimes, Empty, ErrorBox, Link, Loading, Pre } from "../components/ui";
import { formatDuration, scoreMs } from "../format";
import { useResource } from "../hooks";
import { href, navigate } from "../router";
import { session } from "../session";
import { SETS, failures, rowConfirm, type ActionSpec } from "./JobSet";

function Row(props: { label: string; children: ComponentChildren }) {
  return <tr><th scope="row">{props.label}</th><td>{props.children}</td></tr>;
}

function argsText(job: Job): string {
  return job.args === null ? job.args_preview : JSON.stringify(job.args, null, 2);
}

/** Sidekiq's retry setting and options in words: "true; keeps 10 backtrace lines". */
function policy(job: Job): string {
  const { retry, retry_options: o } = job;
  const parts = [retry === null ? "not set (the task's default)" : typeof retry === "number" ? `${retry} retries` : String(retry)];
  if (o.retry_for !== null) parts.push(`for up to ${formatDuration(o.retry_for)} after the first failure`);
  if (o.retry_queue !== null) parts.push(`retries run on queue ${o.retry_queue}`);
  if (o.backtrace === true) parts.push("keeps the whole backtrace");
  else if (typeof o.backtrace === "number" && o.backtrace > 0) parts.push(`keeps ${o.backtrace} backtrace lines`);
  if (o.dead === false) parts.push("discarded, not kept in Dead, when retries run out");
  return parts.join("; ");
}

function Backtrace(props: { job: Job }) {
  const { backtrace, backtrace_unreadable: unreadable } = props.job;
  if (unreadable) return <Row label="Backtrace"><span class="w-muted">unreadable</span></Row>;
  if (backtrace === null || backtrace.length === 0) return null;
  return <Row label="Backtrace"><Pre text={backtrace.join("\n")} /></Row>;
}

/** Payload fields the dashboard has no row for, shown apart with their names as sent. */
function Extra(props: { extra: Record<string, string> }) {
  const fields = Object.entries(props.extra);
  if (fields.length === 0) return null;
  return (
    <section class="w-panel" data-section="extra">
      <h2>Other fields in the payload</h2>
      <table class="w-table w-detail" data-table="extra">
        <tbody>
          {fields.map(([name, value]) => (
            <tr key={name}><th scope="row"><code>{name}</code></th><td><Pre text={value} limit={1000} /></td></tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Actions(props: { set: SetName; job: Job }) {
  const { set, job } = props;
  const act = (spec: ActionSpec) => run(() => api.jobAction(set, job.key, spec.action), {
    confirm: rowConfirm(set, spec, job),
    done: (r) => (r.done === 0 ? "That job had already gone." : `${spec.verb} job ${job.jid ?? ""}.`),
  }).then((r) => { if (r && r.done !== 0) navigate(href(set)); });
  return (
    <div class="w-actions">
      {SETS[set].actions.map((spec) => (
        <button key={spec.action} type="button" data-action={spec.action}
          class={spec.danger ? "w-btn w-btn-danger" : "w-btn"} onClick={() => act(spec)}>{spec.label}</button>
      ))}
    </div>
  );
}

function Fields(props: { set: SetName; job: Job }) {
  const { set, job } = props;
  const failed = failures(job.retry_count);
  return (
    <table class="w-table w-detail" data-table="job">
      <tbody>
        <Row label={SETS[set].when}><BothTimes ms={scoreMs(job.score)} due={SETS[set].due} /></Row>
        <Row label="Queue">{job.queue ?? ""}</Row>
        <Row label="Class">{job.class ?? ""}{job.display_class !== job.class && <div class="w-small w-muted">shown as {job.display_class}</div>}</Row>
        <Row label="JID"><span class="w-mono">{job.jid ?? ""}</span></Row>
        <Row label="Arguments">
          {job.encrypted && <Badge kind="info">last argument encrypted</Badge>}
          <Pre text={argsText(job)} truncated={job.args === null && job.args_truncated} />
        </Row>
        <Row label="Created"><BothTimes ms={job.created_at_ms} /></Row>
        <Row label="Enqueued"><BothTimes ms={job.enqueued_at_ms} /></Row>
        {job.bid && <Row label="Batch"><span class="w-mono">{job.bid}</span></Row>}
        {job.tags.length > 0 && <Row label="Tags">{job.tags.map((t) => <Badge key={t ?? ""} kind="label">{t ?? ""}</Badge>)}</Row>}
        <Row label="Retry policy">{policy(job)}</Row>
        {failed && <Row label="Failures">{failed} <span class="w-muted">(retry count {job.retry_count})</span></Row>}
        {job.failed_at_ms !== null && <Row label="First failure"><BothTimes ms={job.failed_at_ms} /></Row>}
        {job.retried_at_ms !== null && <Row label="Last retry"><BothTimes ms={job.retried_at_ms} /></Row>}
        {job.error_class && <Row label="Error class"><span class="w-strong">{job.error_class}</span></Row>}
        {job.error_message && <Row label="Error message"><Pre text={job.error_message} /></Row>}
        <Backtrace job={job} />
        {job.custom_rows.map(([label, value]) => <Row key={label} label={label}>{value}</Row>)}
      </tbody>
    </table>
  );
}

export default function JobDetail(props: { params: string[] }) {
  const [set, key] = props.params as [SetName, string];
  const meta = SETS[set];
  const res = useResource(() => api.job(set, key), `job-${set}-${key}`, false);
  const job = res.data;
  return (
    <div class="w-page">
      <p class="w-crumbs"><Link to={set}>{meta.title}</Link> ›</p>
      {res.error?.status === 404
        ? <Empty>This job is no longer in {meta.title}: it was retried, moved or deleted. <Link to={set}>Back to {meta.title}</Link></Empty>
        : <ErrorBox error={res.error} />}
      {!job && !res.error && <Loading />}
      {job && (
        <>
          <div class="w-panel-head">
            <h1>{job.display_class ?? "Job"}</h1>
            {session.canAct && <Actions set={set} job={job} />}
          </div>
          <Fields set={set} job={job} />
          <Extra extra={job.extra} />
          <details class="w-raw">
            <summary>Raw payload</summary>
            <Pre text={job.raw} />
          </details>
        </>
      )}
    </div>
  );
}
