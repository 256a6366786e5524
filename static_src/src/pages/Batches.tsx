// Batches, newest first, paged by the server, filtered by tag or description; and the
// dead batches (those with a job in the dead set), newest death first.

import { api, type BatchRow } from "../api";
import { plural } from "../actions";
import { Badge, Empty, ErrorBox, Link, Loading, Pager, SearchForm, Time } from "../components/ui";
import { formatNumber } from "../format";
import { useResource } from "../hooks";
import { intParam, setQuery } from "../router";

/** The share of a batch's jobs that succeeded, 0..1 (an empty batch counts as done when
 * it has succeeded). */
export function progress(row: BatchRow): number {
  if (row.total === 0) return row.success ? 1 : 0;
  return Math.min(row.done / row.total, 1);
}

export function ProgressBar(props: { row: BatchRow }) {
  const { row } = props;
  const share = progress(row);
  return (
    <span class="w-usage" data-progress={share.toFixed(3)}>
      <span class="w-bar-track" role="progressbar" aria-valuemin={0} aria-valuemax={row.total}
        aria-valuenow={row.done} aria-label="Jobs succeeded">
        <span class={row.dead ? "w-bar w-bar-full" : "w-bar"} style={{ width: `${share * 100}%` }} />
      </span>
      <span class="w-bar-value">{formatNumber(row.done)} / {formatNumber(row.total)}</span>
    </span>
  );
}

/** What state a batch is in, as badges. */
export function StateBadges(props: { row: BatchRow }) {
  const { row } = props;
  if (!row.exists) return <Badge kind="warning" title="The batch record has expired">expired</Badge>;
  return (
    <span class="w-badges" data-state>
      {row.success && <Badge title="Every job succeeded">success</Badge>}
      {row.complete && !row.success && <Badge title="Every job ran at least once">complete</Badge>}
      {!row.complete && <Badge kind="info" title="Jobs are still to run">running</Badge>}
      {row.dead && <Badge kind="error" title="A job of it (or of a batch below it) is dead">dead</Badge>}
      {row.failures > 0 && <Badge kind="warning">{plural(row.failures, "failure")}</Badge>}
      {row.invalidated && <Badge kind="warning" title="Its jobs not yet run are skipped">invalidated</Badge>}
    </span>
  );
}

export function BatchRows(props: { items: BatchRow[]; dead?: boolean }) {
  return (
    <div class="w-table-wrap">
      <table class="w-table w-stack" data-table="batches">
        <thead><tr><th>Batch</th><th>Progress</th><th>State</th><th class="w-num">{props.dead ? "Died" : "Created"}</th></tr></thead>
        <tbody>
          {props.items.map((row) => (
            <tr key={row.bid} data-batch={row.bid}>
              <td data-label="Batch">
                <Link to={`batches/${encodeURIComponent(row.bid)}`} class="w-strong">{row.description || row.bid}</Link>
                <div class="w-small w-muted w-mono">{row.bid}</div>
                {row.tags.length > 0 && (
                  <div class="w-badges">{row.tags.map((tag) => (
                    <Link key={tag} to="batches" query={{ tag }} class="w-badge" title="Batches with this tag">{tag}</Link>
                  ))}</div>
                )}
              </td>
              <td data-label="Progress" data-cell="progress"><ProgressBar row={row} />
                <div class="w-small w-muted">{formatNumber(row.pending)} pending</div></td>
              <td data-label="State"><StateBadges row={row} /></td>
              <td data-label={props.dead ? "Died" : "Created"} class="w-num">
                <Time ms={props.dead ? row.death_at_ms : row.created_at_ms} rel /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TagFilter(props: { tag: string }) {
  if (!props.tag) return null;
  return (
    <p class="w-filter" data-filter="tag">Tag <Badge>{props.tag}</Badge>{" "}
      <button type="button" class="w-link-button" onClick={() => setQuery({ tag: "", page: "" })}>show all tags</button></p>
  );
}

function Tabs(props: { dead: boolean }) {
  return (
    <nav class="w-segmented" aria-label="Batches">
      <Link to="batches" class={props.dead ? "w-btn" : "w-btn w-btn-current"}>All batches</Link>
      <Link to="batches/dead" class={props.dead ? "w-btn w-btn-current" : "w-btn"}>Dead batches</Link>
    </nav>
  );
}

export default function Batches(props: { params: string[]; query: URLSearchParams }) {
  const dead = props.params[0] === "dead";
  const page = intParam(props.query, "page", 1);
  const q = dead ? "" : props.query.get("q") || "";
  const tag = dead ? "" : props.query.get("tag") || "";
  const res = useResource<{ items: BatchRow[]; total: number; page: number; pages: number; truncated: boolean }>(
    () => (dead ? api.deadBatches({ page }) : api.batches({ page, q, tag })),
    `batches-${dead}-${page}-${q}-${tag}`);
  const data = res.data;
  const items = data?.items ?? [];
  const filtered = q !== "" || tag !== "";
  return (
    <div class="w-page">
      <h1>{dead ? "Dead batches" : "Batches"}</h1>
      <div class="w-toolbar">
        <Tabs dead={dead} />
        {!dead && <SearchForm value={q} placeholder="Filter by description" />}
      </div>
      <TagFilter tag={tag} />
      <ErrorBox error={res.error} />
      {res.loading && !data && <Loading />}
      {data && items.length === 0 && (
        <Empty>{dead ? "No batch has a dead job." : filtered ? "No batch matches." : "No batches yet: a `with Batch():` block creates one."}</Empty>
      )}
      {items.length > 0 && (
        <>
          <p class="w-muted w-small" data-total={data?.total}>{plural(data?.total ?? 0, "batch", "batches")}
            {data?.truncated && " (the search stopped early: narrow it down)"}</p>
          <BatchRows items={items} dead={dead} />
        </>
      )}
      {data && <Pager page={data.page} pages={data.pages} />}
    </div>
  );
}
