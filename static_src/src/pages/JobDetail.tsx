// One job of a sorted set: everything in its payload, decoded, plus the set's actions.

import { api, type Json, type SetName } from "../api";
import { run } from "../actions";
import { Badge, BothTimes, Empty, ErrorBox, Link, Loading, Pre } from "../components/ui";
import { toMs } from "../format";
import { useResource } from "../hooks";
import { href, navigate } from "../router";
import { session } from "../session";
import { SETS, type ActionSpec } from "./JobSet";

function Row(props: { label: string; children: any }) {
  return <tr><th scope="row">{props.label}</th><td>{props.children}</td></tr>;
}

function text(value: unknown): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function argsText(job: Json): string {
  if (job.args === null || job.args === undefined) return String(job.args_preview ?? "");
  return JSON.stringify(job.args, null, 2);
}

function Backtrace(props: { job: Json }) {
  const bt = props.job.backtrace ?? props.job.error_backtrace;
  if (bt === undefined) return null;
  if (bt === null || bt === "unreadable" || (typeof bt === "object" && !Array.isArray(bt))) {
    return <Row label="Backtrace"><span class="w-muted">unreadable</span></Row>;
  }
  const lines = Array.isArray(bt) ? bt.map(String) : [String(bt)];
  if (lines.length === 0) return null;
  return <Row label="Backtrace"><Pre text={lines.join("\n")} /></Row>;
}

export default function JobDetail(props: { params: string[] }) {
  const [set, key] = props.params as [SetName, string];
  const meta = SETS[set];
  const res = useResource(() => api.job(set, key), `job-${set}-${key}`, false);
  const job = res.data as Json | undefined;
  const act = (spec: ActionSpec) => run(() => api.jobAction(set, key, spec.action), {
    confirm: spec.danger ? { title: `${spec.label} this job?`, body: "It cannot be undone.", confirm: spec.label, danger: true } : undefined,
    done: (r) => (r.done === 0 ? "That job had already gone." : `${spec.verb} job ${String(job?.jid ?? "")}.`),
  }).then((r) => { if (r && r.done !== 0) navigate(href(set)); });
  const extra = job?.extra && typeof job.extra === "object" ? Object.entries(job.extra as Json) : [];
  const customRows: [string, string][] = Array.isArray(job?.custom_rows) ? job!.custom_rows : [];
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
            <h1>{String(job.display_class ?? job.class ?? "Job")}</h1>
            {session.canAct && (
              <div class="w-actions">
                {meta.actions.map((spec) => (
                  <button key={spec.action} type="button" data-action={spec.action}
                    class={spec.danger ? "w-btn w-btn-danger" : "w-btn"}
                    onClick={() => act(spec)}>{spec.label}</button>
                ))}
              </div>
            )}
          </div>
          <table class="w-table w-detail" data-table="job">
            <tbody>
              <Row label={meta.when}><BothTimes ms={toMs(job.score)} /></Row>
              <Row label="Queue">{text(job.queue)}</Row>
              <Row label="Class">{text(job.class)}{job.display_class && job.display_class !== job.class && <div class="w-small w-muted">shown as {text(job.display_class)}</div>}</Row>
              <Row label="JID"><span class="w-mono">{text(job.jid)}</span></Row>
              <Row label="Arguments">
                {job.encrypted && <Badge kind="info">last argument encrypted</Badge>}
                <Pre text={argsText(job)} truncated={job.args === null && job.args_truncated} />
              </Row>
              <Row label="Created"><BothTimes ms={toMs(job.created_at_ms)} /></Row>
              <Row label="Enqueued"><BothTimes ms={toMs(job.enqueued_at_ms)} /></Row>
              {job.bid && <Row label="Batch"><span class="w-mono">{text(job.bid)}</span></Row>}
              {Array.isArray(job.tags) && job.tags.length > 0 && <Row label="Tags">{job.tags.map((t: unknown) => <Badge key={text(t)} kind="label">{text(t)}</Badge>)}</Row>}
              <Row label="Retry policy">{text(job.retry)}</Row>
              {job.retry_count !== undefined && job.retry_count !== null && <Row label="Retry count">{text(job.retry_count)}</Row>}
              {job.failed_at_ms && <Row label="First failure"><BothTimes ms={toMs(job.failed_at_ms)} /></Row>}
              {job.retried_at_ms && <Row label="Last retry"><BothTimes ms={toMs(job.retried_at_ms)} /></Row>}
              {job.error_class && <Row label="Error class"><span class="w-strong">{text(job.error_class)}</span></Row>}
              {job.error_message && <Row label="Error message"><Pre text={text(job.error_message)} /></Row>}
              <Backtrace job={job} />
              {customRows.map(([label, value]) => <Row key={text(label)} label={text(label)}>{text(value)}</Row>)}
              {extra.map(([k, v]) => <Row key={k} label={k}><Pre text={typeof v === "string" ? v : JSON.stringify(v, null, 2)} limit={1000} /></Row>)}
            </tbody>
          </table>
          {job.raw && (
            <details class="w-raw">
              <summary>Raw payload</summary>
              <Pre text={text(job.raw)} />
            </details>
          )}
        </>
      )}
    </div>
  );
}
