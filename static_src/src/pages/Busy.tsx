// Busy: live processes (quiet/stop) and the jobs they run now.

import { api, type ProcessItem } from "../api";
import { run } from "../actions";
import { Badge, ErrorBox, Empty, Loading, Pager, Problems, Time } from "../components/ui";
import { formatDuration, formatKb, formatNumber } from "../format";
import { useResource } from "../hooks";
import { intParam } from "../router";
import { session } from "../session";

function processName(p: ProcessItem): string {
  return p.hostname && p.pid ? `${p.hostname}:${p.pid}` : p.identity;
}

function ProcessRow(props: { p: ProcessItem }) {
  const { p } = props;
  const capsules = Object.entries(p.capsules);
  const signal = (action: "quiet" | "stop") => run(() => api.signalProcess(p.identity, action), {
    confirm: action === "stop"
      ? { title: "Stop this process?", body: `${processName(p)} finishes its running jobs (up to its timeout) and exits.`, confirm: "Stop", danger: true }
      : undefined,
    done: () => `${action === "quiet" ? "Quiet" : "Stop"} sent to ${processName(p)}; it acts on its next heartbeat.`,
  });
  return (
    <tr>
      <td>
        <div class="w-strong">{processName(p)}</div>
        <div class="w-badges">
          {p.tag && <Badge>{p.tag}</Badge>}
          {p.labels.map((l) => <Badge key={l} kind="label">{l}</Badge>)}
          {p.quiet && <Badge kind="warning">quiet</Badge>}
          {p.embedded && <Badge kind="info">embedded</Badge>}
          {p.stale && <Badge kind="error" title="No heartbeat for three intervals">stale</Badge>}
        </div>
      </td>
      <td>
        {capsules.length > 1
          ? capsules.map(([name, c]) => (
            <div key={name} class="w-small">
              <span class="w-muted">{name} ({c.concurrency}): </span>
              {Object.keys(c.weights).join(", ")}
            </div>))
          : <span class="w-small">{p.queues.join(", ")}</span>}
      </td>
      <td>{p.version ?? "—"}</td>
      <td><Time ms={p.started_at_ms} rel /></td>
      <td class="w-num">{formatKb(p.rss)}</td>
      <td class="w-num">{formatNumber(p.concurrency)}</td>
      <td class="w-num">{formatNumber(p.busy)}</td>
      {session.canAct && (
        <td class="w-actions">
          {!p.embedded && !p.quiet && <button type="button" class="w-btn w-btn-small" onClick={() => signal("quiet")}>Quiet</button>}
          {!p.embedded && <button type="button" class="w-btn w-btn-small w-btn-danger" onClick={() => signal("stop")}>Stop</button>}
        </td>
      )}
    </tr>
  );
}

function Processes() {
  const res = useResource(() => api.processes(), "processes");
  const data = res.data;
  const items = data?.items ?? [];
  const all = (action: "quiet" | "stop") => run(() => api.signalAll(action), {
    confirm: { title: `${action === "quiet" ? "Quiet" : "Stop"} every process?`,
      body: `Sends ${action} to ${items.filter((p) => !p.embedded).length} processes (embedded ones are skipped).`,
      confirm: action === "quiet" ? "Quiet all" : "Stop all", danger: action === "stop" },
    done: () => `${action === "quiet" ? "Quiet" : "Stop"} sent to every process.`,
  });
  return (
    <section class="w-panel">
      <div class="w-panel-head">
        <h2>Processes</h2>
        {session.canAct && items.length > 0 && (
          <div class="w-actions">
            <button type="button" class="w-btn" onClick={() => all("quiet")}>Quiet all</button>
            <button type="button" class="w-btn w-btn-danger" onClick={() => all("stop")}>Stop all</button>
          </div>
        )}
      </div>
      {data && (
        <dl class="w-facts w-facts-row">
          <div><dt>Processes</dt><dd>{formatNumber(data.processes)}</dd></div>
          <div><dt>Threads</dt><dd>{formatNumber(data.threads)}</dd></div>
          <div><dt>Busy</dt><dd>{formatNumber(data.busy)}</dd></div>
          <div><dt>Utilisation</dt><dd>{data.threads ? `${Math.round(data.utilization)} %` : "—"}</dd></div>
          <div><dt>Total RSS</dt><dd>{formatKb(data.rss)}</dd></div>
        </dl>
      )}
      <ErrorBox error={res.error} />
      <Problems problems={data?.problems} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>No worker process is running. Start one with <code>manage.py wurk_worker</code>.</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="processes">
            <thead><tr><th>Process</th><th>Queues</th><th>Version</th><th>Started</th><th class="w-num">RSS</th>
              <th class="w-num">Threads</th><th class="w-num">Busy</th>{session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}</tr></thead>
            <tbody>{items.map((p) => <ProcessRow key={p.identity} p={p} />)}</tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Work(props: { page: number }) {
  const res = useResource(() => api.work({ page: props.page, count: 100 }), `work-${props.page}`);
  const items = res.data?.items ?? [];
  const now = Date.now();
  return (
    <section class="w-panel">
      <h2>Running jobs</h2>
      <ErrorBox error={res.error} />
      <Problems problems={res.data?.problems} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>No job is running right now.</Empty>}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="work">
            <thead><tr><th>Process</th><th>Thread</th><th>JID</th><th>Queue</th><th>Class</th><th>Arguments</th><th>Started</th><th class="w-num">Running for</th></tr></thead>
            <tbody>
              {items.map((w) => {
                const started = w.run_at_ms;
                return (
                  <tr key={`${w.identity}-${w.tid}`}>
                    <td class="w-small">{w.identity}</td>
                    <td class="w-mono w-small">{w.tid}</td>
                    <td class="w-mono">{w.jid ?? ""}</td>
                    <td>{w.queue ?? ""}</td>
                    <td>{w.display_class ?? ""}</td>
                    <td><code class="w-args">{w.args_preview}</code></td>
                    <td><Time ms={started} /></td>
                    <td class="w-num">{started ? formatDuration((now - started) / 1000) : "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {res.data && <Pager page={res.data.page} pages={res.data.pages} />}
    </section>
  );
}

export default function Busy(props: { query: URLSearchParams }) {
  return (
    <div class="w-page">
      <h1>Busy</h1>
      <Processes />
      <Work page={intParam(props.query, "page", 1)} />
    </div>
  );
}
