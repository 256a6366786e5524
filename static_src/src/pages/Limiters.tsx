// Rate limiters (§1.9): the list when limiters exist, else an empty state.

import { api, itemsOf } from "../api";
import { Empty, ErrorBox, Loading, Pager, SearchForm } from "../components/ui";
import { formatNumber } from "../format";
import { useResource } from "../hooks";
import { intParam } from "../router";

export default function Limiters(props: { query: URLSearchParams }) {
  const page = intParam(props.query, "page", 1);
  const q = props.query.get("q") || "";
  const res = useResource(() => api.limiters({ page, q }), `limiters-${page}-${q}`);
  const items = itemsOf(res.data);
  const missing = res.error?.status === 404;
  return (
    <div class="w-page">
      <h1>Limiters</h1>
      {!missing && <ErrorBox error={res.error} />}
      {!res.data && !res.error && <Loading />}
      {(items.length > 0 || q) && <div class="w-toolbar"><SearchForm key={q} value={q} placeholder="Filter by name" /></div>}
      {(missing || (res.data && items.length === 0)) && (
        <Empty>{q ? "No limiter matches." : "No rate limiter exists. Limiters cap how often or how many jobs run at once; they appear here once code uses one."}</Empty>
      )}
      {items.length > 0 && (
        <div class="w-table-wrap">
          <table class="w-table" data-table="limiters">
            <thead><tr><th>Name</th><th>Type</th><th class="w-num">Limit</th><th>Interval</th><th class="w-num">In use</th></tr></thead>
            <tbody>
              {items.map((l) => (
                <tr key={String(l.name)}>
                  <td class="w-strong">{String(l.name)}</td>
                  <td>{String(l.type ?? "")}</td>
                  <td class="w-num">{formatNumber(l.limit)}</td>
                  <td>{String(l.interval ?? "—")}</td>
                  <td class="w-num">{formatNumber(l.current ?? l.in_use)}</td>
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
