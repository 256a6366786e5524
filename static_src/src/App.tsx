// Routes: each page is its own chunk, loaded on first visit.

import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Layout } from "./components/Layout";
import { Empty, Loading } from "./components/ui";
import { useLocation } from "./router";

type PageProps = { params: string[]; query: URLSearchParams };
type Loader = () => Promise<{ default: ComponentType<PageProps> }>;

/** A page component fetched on first use; later visits render it at once. */
function lazy(load: Loader): ComponentType<PageProps> {
  let loaded: ComponentType<PageProps> | undefined;
  return function LazyPage(props: PageProps) {
    const [, setReady] = useState(false);
    useEffect(() => {
      if (!loaded) load().then((m) => { loaded = m.default; setReady(true); });
    }, []);
    const Loaded = loaded;
    return Loaded ? <Loaded {...props} /> : <Loading />;
  };
}

const Overview = lazy(() => import("./pages/Overview"));
const Busy = lazy(() => import("./pages/Busy"));
const Queues = lazy(() => import("./pages/Queues"));
const Queue = lazy(() => import("./pages/Queue"));
const JobSet = lazy(() => import("./pages/JobSet"));
const JobDetail = lazy(() => import("./pages/JobDetail"));
const Metrics = lazy(() => import("./pages/Metrics"));
const MetricsClass = lazy(() => import("./pages/MetricsClass"));
const History = lazy(() => import("./pages/History"));
const Periodic = lazy(() => import("./pages/Periodic"));
const PeriodicLoop = lazy(() => import("./pages/PeriodicLoop"));
const Limiters = lazy(() => import("./pages/Limiters"));
const Limiter = lazy(() => import("./pages/Limiter"));
const Batches = lazy(() => import("./pages/Batches"));
const Batch = lazy(() => import("./pages/Batch"));

const ROUTES: [RegExp, ComponentType<PageProps>, string][] = [
  [/^$/, Overview, "Overview"],
  [/^busy$/, Busy, "Busy"],
  [/^queues$/, Queues, "Queues"],
  [/^queues\/([^/]+)$/, Queue, "Queue"],
  [/^(retries|scheduled|dead)$/, JobSet, ""],
  [/^(retries|scheduled|dead)\/([^/]+)$/, JobDetail, "Job"],
  [/^metrics$/, Metrics, "Metrics"],
  [/^metrics\/([^/]+)$/, MetricsClass, "Metrics"],
  [/^history$/, History, "History"],
  [/^periodic$/, Periodic, "Periodic jobs"],
  [/^periodic\/([^/]+)$/, PeriodicLoop, "Periodic job"],
  [/^limiters$/, Limiters, "Rate limiters"],
  [/^limiters\/([^/]+)$/, Limiter, "Rate limiter"],
  [/^batches(?:\/(dead))?$/, Batches, "Batches"],
  [/^batches\/([^/]+)$/, Batch, "Batch"],
];

const TITLES: Record<string, string> = { retries: "Retries", scheduled: "Scheduled", dead: "Dead" };

function NotFound() {
  return <Empty>There is no such page in the dashboard.</Empty>;
}

export function App() {
  const { path, query } = useLocation();
  let page = <NotFound />;
  let title = "Not found";
  for (const [pattern, Page, name] of ROUTES) {
    const match = pattern.exec(path);
    if (match) {
      const params = match.slice(1).map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
      page = <Page params={params} query={query} />;
      title = name || TITLES[params[0]];
      break;
    }
  }
  useEffect(() => { document.title = `${title} · Wurk`; }, [title]);
  return <Layout path={path}>{page}</Layout>;
}
