// Batches (§1.7): the list when batches exist, else an empty state.

import { api, itemsOf } from "../api";
import { Empty, ErrorBox, Loading, Pager, Time } from "../components/ui";
import { formatNumber, toMs } from "../format";
import { useResource } from "../hooks";
import { intParam } from "../router";

export default function Batches(props: { query: URLSearchParams }) {
  const page = intParam(props.query, "page", 1);
  const res = useResource(() => api.batches({ page }), `batches-${page}`);
  const items = itemsOf(res.data);
  const missing = res.error?.status === 404;
  return (
    <div class="w-page">
      <h1>Batches</h1>
      {!missing && <ErrorBox error={res.error} />}
      {!res.data && !res.error && <Loading />}
      {(missing || (res.data && items.length === 0)) && (
        <Empty>No batch exists. Batches group jobs and run callbacks when all of them have finished; they appear here once one is created.</Empty>
      )}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="batches">
            <thead><tr><th>Batch</th><th>Created</th><th class="w-num">Total</th><th class="w-num">Pending</th><th class="w-num">Failures</th></tr></thead>
            <tbody>
              {items.map((b) => (
                <tr key={String(b.bid)}>
                  <td><div class="w-mono">{String(b.bid)}</div><div class="w-small">{String(b.description ?? "")}</div></td>
                  <td><Time ms={toMs(b.created_at_ms ?? b.created_at)} rel /></td>
                  <td class="w-num">{formatNumber(b.total)}</td>
                  <td class="w-num">{formatNumber(b.pending)}</td>
                  <td class="w-num">{formatNumber(b.failures)}</td>
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
