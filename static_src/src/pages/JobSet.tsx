// Retries, Scheduled and Dead: one component. Server paging, sort on
// the score, search and field filters in the URL, row, bulk and "all" actions.

import { useEffect, useState } from "preact/hooks";
import { api, type JobRow, type MutationResult, type SetName } from "../api";
import { describe, plural, run } from "../actions";
import { ask } from "../components/Confirm";
import { toast } from "../components/Toasts";
import { Empty, ErrorBox, Link, Loading, Pager, SearchForm, Time } from "../components/ui";
import { formatNumber, scoreMs } from "../format";
import { useResource } from "../hooks";
import { intParam, setQuery } from "../router";
import { session } from "../session";

export interface ActionSpec {
  action: string;
  label: string;
  verb: string; // past tense for toasts
  all: string; // the button acting on the whole set
  danger?: boolean;
}

// `due`: the score is when the job should move to its queue, so a passed time reads
// "due now" (the scheduler picks it up within a poll) rather than "… ago".
export const SETS: Record<SetName, { title: string; when: string; due: boolean; defaultSort: "asc" | "desc"; actions: ActionSpec[]; empty: string }> = {
  retries: {
    title: "Retries", when: "Next retry", due: true, defaultSort: "asc", empty: "No job is waiting for a retry.",
    actions: [
      { action: "retry", label: "Retry now", verb: "Retried", all: "Retry all" },
      { action: "delete", label: "Delete", verb: "Deleted", all: "Delete all", danger: true },
      { action: "kill", label: "Kill", verb: "Killed", all: "Kill all", danger: true },
    ],
  },
  scheduled: {
    title: "Scheduled", when: "Scheduled for", due: true, defaultSort: "asc", empty: "No job is scheduled.",
    actions: [
      { action: "add_to_queue", label: "Add to queue", verb: "Enqueued", all: "Enqueue all" },
      { action: "delete", label: "Delete", verb: "Deleted", all: "Delete all", danger: true },
    ],
  },
  dead: {
    title: "Dead", when: "Died", due: false, defaultSort: "desc", empty: "No dead job: nothing has run out of retries.",
    actions: [
      { action: "retry", label: "Retry now", verb: "Retried", all: "Retry all" },
      { action: "delete", label: "Delete", verb: "Deleted", all: "Delete all", danger: true },
    ],
  },
};

const FILTERS: [string, string][] = [["class", "Class"], ["queue", "Queue"], ["error_class", "Error class"]];

function Filters(props: { query: URLSearchParams }) {
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(FILTERS.map(([key]) => [key, props.query.get(key) || ""])));
  return (
    <form class="w-filters" onSubmit={(e) => { e.preventDefault(); setQuery({ ...values, page: "" }); }}>
      {FILTERS.map(([key, label]) => (
        <label key={key}>
          <span>{label}</span>
          <input type="text" value={values[key]} name={key}
            onInput={(e) => setValues({ ...values, [key]: (e.target as HTMLInputElement).value.trim() })} />
        </label>
      ))}
      <button type="submit" class="w-btn">Filter</button>
    </form>
  );
}

/** Repeat an "all" action until the server reports nothing remaining. */
async function runAll(set: SetName, spec: ActionSpec, total: number): Promise<MutationResult> {
  let done = 0;
  let missing = 0;
  let result: MutationResult = { requested: 0, done: 0, missing: 0, remaining: 0 };
  let expected = total;
  for (let round = 0; round < 1000; round++) {
    result = await api.all(set, spec.action, expected);
    done += result.done;
    missing += result.missing;
    if (!result.remaining) break;
    expected = result.remaining;
    toast(`${spec.verb} ${formatNumber(done)} so far; ${formatNumber(result.remaining)} to go…`);
  }
  return { ...result, done, missing };
}

function AllActions(props: { set: SetName; total: number }) {
  const { set, total } = props;
  if (!session.canAct || total === 0) return null;
  const start = (spec: ActionSpec) => run(() => runAll(set, spec, total), {
    confirm: {
      title: `${spec.all}: ${plural(total, "job")}?`,
      body: `This applies "${spec.label.toLowerCase()}" to all ${plural(total, "job")} in ${SETS[set].title}, not only the ones shown.` +
        (spec.danger ? " It cannot be undone." : ""),
      confirm: `${spec.all} (${formatNumber(total)})`,
      danger: spec.danger,
    },
    done: (r) => describe(r, spec.verb),
  });
  return (
    <div class="w-actions w-all-actions" aria-label="Actions on the whole set">
      {SETS[set].actions.map((spec) => (
        <button key={spec.action} type="button" class={spec.danger ? "w-btn w-btn-danger" : "w-btn"}
          data-all-action={spec.action} onClick={() => start(spec)}>
          {spec.all}
        </button>
      ))}
    </div>
  );
}

/** "failed once", "failed 4 times": Sidekiq's retry_count is 0 after the first failure. */
export function failures(retryCount: number | null): string | null {
  if (retryCount === null) return null;
  const n = retryCount + 1;
  return n === 1 ? "failed once" : `failed ${formatNumber(n)} times`;
}

/** The confirmation a destructive row action asks for (delete, kill); none otherwise. */
export function rowConfirm(set: SetName, spec: ActionSpec, job: JobRow) {
  if (!spec.danger) return undefined;
  const name = `${job.display_class ?? "job"} ${job.jid ?? ""}`.trim();
  const body = spec.action === "kill"
    ? `${name} moves to Dead and is not retried again.`
    : `${name} leaves ${SETS[set].title} and will not run. It cannot be undone.`;
  return { title: `${spec.label} ${name}?`, body, confirm: spec.label, danger: true };
}

function Row(props: { set: SetName; job: JobRow; selected: boolean; onSelect: (on: boolean) => void }) {
  const { set, job } = props;
  const { key } = job;
  const act = (spec: ActionSpec) => run(() => api.jobAction(set, key, spec.action), {
    confirm: rowConfirm(set, spec, job),
    done: (r) => (r.done === 0 ? "That job had already gone." : `${spec.verb} ${job.display_class ?? "job"} ${job.jid ?? ""}.`),
  });
  const showError = set !== "scheduled";
  const failed = failures(job.retry_count);
  return (
    <tr data-jid={job.jid ?? ""}>
      {session.canAct && (
        <td class="w-check">
          <input type="checkbox" checked={props.selected} aria-label={`Select job ${job.jid ?? key}`}
            onChange={(e) => props.onSelect((e.target as HTMLInputElement).checked)} />
        </td>
      )}
      <td data-label={SETS[set].when} data-cell="when"><Link to={`${set}/${encodeURIComponent(key)}`}><Time ms={scoreMs(job.score)} rel due={SETS[set].due} /></Link></td>
      <td data-label="Queue">{job.queue ?? ""}</td>
      <td data-label="Job">
        <div>{job.display_class ?? ""}</div>
        <div class="w-mono w-small w-muted">{job.jid ?? ""}</div>
      </td>
      <td data-label="Arguments"><code class="w-args">{job.args_preview}</code></td>
      {showError && (
        <td data-label="Error" class="w-error-cell">
          {job.error_class && <div class="w-strong">{job.error_class}</div>}
          <div class="w-small">{(job.error_message ?? "").slice(0, 300)}</div>
          {failed && <div class="w-small w-muted" data-cell="failures">{failed}</div>}
        </td>
      )}
      {session.canAct && (
        <td class="w-actions">
          {SETS[set].actions.map((spec) => (
            <button key={spec.action} type="button" data-action={spec.action}
              class={spec.danger ? "w-btn w-btn-small w-btn-danger" : "w-btn w-btn-small"}
              onClick={() => act(spec)}>{spec.label}</button>
          ))}
        </td>
      )}
    </tr>
  );
}

export default function JobSet(props: { params: string[]; query: URLSearchParams }) {
  const set = props.params[0] as SetName;
  const meta = SETS[set];
  const { query } = props;
  const page = intParam(query, "page", 1);
  const sort = query.get("sort") === "asc" || query.get("sort") === "desc" ? query.get("sort")! : meta.defaultSort;
  const filters = { q: query.get("q") || "", class: query.get("class") || "", queue: query.get("queue") || "", error_class: query.get("error_class") || "" };
  const key = `${set}-${page}-${sort}-${JSON.stringify(filters)}`;
  const res = useResource(() => api.set(set, { page, count: 25, sort, ...filters }), key);
  const items = res.data?.items ?? [];
  const total = res.data?.total ?? 0;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  useEffect(() => setSelected(new Set()), [key]);
  const visible = new Set(items.map((j) => j.key));
  const chosen = [...selected].filter((k) => visible.has(k));
  const allChosen = items.length > 0 && chosen.length === items.length;
  const toggle = (k: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(k); else next.delete(k);
    setSelected(next);
  };
  const bulk = async (spec: ActionSpec) => {
    const result = await run(() => api.bulk(set, spec.action, chosen), {
      confirm: spec.danger ? { title: `${spec.label} ${plural(chosen.length, "job")}?`, body: `${spec.label} the ${plural(chosen.length, "selected job")}. It cannot be undone.`, confirm: spec.label, danger: true } : undefined,
      done: (r) => describe(r, spec.verb),
    });
    if (result) setSelected(new Set());
  };
  const flipSort = () => setQuery({ sort: sort === meta.defaultSort ? (sort === "asc" ? "desc" : "asc") : "", page: "" });
  const filtered = Object.values(filters).some(Boolean);
  const showError = set !== "scheduled";
  return (
    <div class="w-page">
      <div class="w-panel-head">
        <h1>{meta.title} <span class="w-count">{formatNumber(total)}</span></h1>
        <AllActions set={set} total={filtered ? 0 : total} />
      </div>
      <div class="w-toolbar">
        <SearchForm key={`q-${set}-${filters.q}`} value={filters.q} placeholder="Search by class, jid or argument text" />
      </div>
      <details class="w-more-filters" open={Boolean(filters.class || filters.queue || filters.error_class)}>
        <summary>Filter by field</summary>
        <Filters key={`f-${set}`} query={query} />
      </details>
      {res.data?.truncated && (
        <div class="w-banner w-banner-warning" role="note">The search stopped early (too many entries or matches): refine it to see every hit.</div>
      )}
      <ErrorBox error={res.error} />
      {res.loading && !res.data && <Loading />}
      {res.data && items.length === 0 && <Empty>{filtered ? "No job matches this search." : meta.empty}</Empty>}
      {session.canAct && chosen.length > 0 && (
        <div class="w-bulkbar" role="region" aria-label="Selected jobs">
          <span>{plural(chosen.length, "job")} selected</span>
          {meta.actions.map((spec) => (
            <button key={spec.action} type="button" data-bulk-action={spec.action}
              class={spec.danger ? "w-btn w-btn-danger" : "w-btn"} onClick={() => bulk(spec)}>{spec.label}</button>
          ))}
        </div>
      )}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table w-stack" data-table="jobs">
            <thead>
              <tr>
                {session.canAct && (
                  <th class="w-check">
                    <input type="checkbox" checked={allChosen} aria-label="Select every job on this page"
                      onChange={(e) => setSelected((e.target as HTMLInputElement).checked ? new Set(visible) : new Set())} />
                  </th>
                )}
                <th aria-sort={sort === "asc" ? "ascending" : "descending"}>
                  <button type="button" class="w-sort" onClick={flipSort} title="Change the order">
                    {meta.when} {sort === "asc" ? "▲" : "▼"}
                  </button>
                </th>
                <th>Queue</th><th>Job</th><th>Arguments</th>{showError && <th>Error</th>}
                {session.canAct && <th><span class="w-visually-hidden">Actions</span></th>}
              </tr>
            </thead>
            <tbody>
              {items.map((job) => (
                <Row key={job.key} set={set} job={job} selected={selected.has(job.key)}
                  onSelect={(on) => toggle(job.key, on)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {res.data && <Pager page={res.data.page} pages={res.data.pages} />}
    </div>
  );
}
