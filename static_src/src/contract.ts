// Type-checks the mock server's fixture (dev/api-fixture.json, recorded from the real
// API by tests/django/test_dashboard_contract.py) against the interfaces in api.ts, so
// `npm run build` fails when the API and the front-end's types disagree. Never bundled:
// nothing imports this module.

import fixture from "../dev/api-fixture.json";
import type * as Api from "./api";

// JSON modules type strings as `string` and arrays as arrays: compare against the same
// interfaces with their string literals and tuples widened that way.
type Wide<T> = T extends string ? string
  : T extends readonly (infer U)[] ? Wide<U>[]
  : T extends object ? { [K in keyof T]: Wide<T[K]> }
  : T;

const r = fixture.responses;

export const checked = [
  r["GET meta"].body satisfies Wide<Api.Meta>,
  r["GET stats"].body satisfies Wide<Api.Stats>,
  r["GET stats/history"].body satisfies Wide<Api.History>,
  r["GET processes"].body satisfies Wide<Api.Processes>,
  r["GET work"].body satisfies Wide<Api.Work>,
  r["GET queues"].body satisfies Wide<Api.Queues>,
  r["GET queues/:name"].body satisfies Wide<Api.QueueInfo>,
  r["GET queues/:name/jobs"].body satisfies Wide<Api.QueueJobs>,
  r["GET sets/retries"].body satisfies Wide<Api.SetPage>,
  r["GET sets/scheduled"].body satisfies Wide<Api.SetPage>,
  r["GET sets/dead"].body satisfies Wide<Api.SetPage>,
  r["GET sets/:set/:key"].body satisfies Wide<Api.JobDetail>,
  r["GET metrics"].body satisfies Wide<Api.Metrics>,
  r["GET metrics/:class"].body satisfies Wide<Api.ClassMetrics>,
  r["GET periodic"].body satisfies Wide<Api.Loops>,
  r["GET periodic/:lid"].body satisfies Wide<Api.LoopDetail>,
  r["GET snapshots"].body satisfies Wide<Api.Snapshots>,
  r["GET batches"].body satisfies Wide<Api.BatchPage>,
  r["GET batches/dead"].body satisfies Wide<Api.Paged<Api.BatchRow>>,
  r["GET batches/:bid"].body satisfies Wide<Api.BatchDetail>,
  r["POST batches/:bid/invalidate"].body satisfies Wide<Api.InvalidateResult>,
  r["GET limiters"].body satisfies Wide<Api.Limiters>,
  r["GET limiters/:name"].body satisfies Wide<Api.LimiterDetail>,
  r["POST limiters/:name/reset"].body satisfies Wide<Api.ResetResult>,
  r["POST periodic/:lid/run"].body satisfies Wide<Api.RunResult>,
  r["POST queues/:name/pause"].body satisfies Wide<Api.PauseResult>,
  r["POST sets/:set/bulk"].body satisfies Wide<Api.BulkResult>,
];
