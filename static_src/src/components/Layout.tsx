// The frame around every page: header, the polled numbers, navigation, banners.

import type { ComponentChildren } from "preact";
import { formatDuration, formatNumber, setZone, useZone } from "../format";
import { POLL_CHOICES, setPollInterval, usePoll } from "../poll";
import type { Feature } from "../api";
import { hasFeature, session } from "../session";
import { useStats, useStatsPolling } from "../stats";
import { ConfirmHost } from "./Confirm";
import { Toasts } from "./Toasts";
import { Link, Problems } from "./ui";

// A section with a feature appears only when `api/meta` says the server offers it.
export const NAV: { path: string; label: string; feature?: Feature }[] = [
  { path: "", label: "Overview" },
  { path: "busy", label: "Busy" },
  { path: "queues", label: "Queues" },
  { path: "retries", label: "Retries" },
  { path: "scheduled", label: "Scheduled" },
  { path: "dead", label: "Dead" },
  { path: "metrics", label: "Metrics", feature: "metrics" },
  { path: "history", label: "History" },
  { path: "periodic", label: "Periodic", feature: "periodic" },
  { path: "batches", label: "Batches", feature: "batches" },
  { path: "limiters", label: "Limiters", feature: "limiters" },
];

function section(path: string): string {
  return path.split("/")[0];
}

function PollSelect() {
  const { intervalS } = usePoll();
  return (
    <label class="w-poll">
      <span>Refresh</span>
      <select value={String(intervalS)} aria-label="Refresh interval"
        onChange={(e) => setPollInterval(Number((e.target as HTMLSelectElement).value))}>
        {POLL_CHOICES.map((s) => <option key={s} value={String(s)}>every {s} s</option>)}
        <option value="0">paused</option>
      </select>
    </label>
  );
}

function ZoneToggle() {
  const zone = useZone();
  return (
    <button type="button" class="w-btn w-btn-small" title="Show times in UTC or in this browser's time zone"
      onClick={() => setZone(zone === "utc" ? "local" : "utc")}>
      Times: {zone === "utc" ? "UTC" : "local"}
    </button>
  );
}

function StatsBar() {
  const { stats } = useStats();
  // A number is null when its key holds the wrong type: "—", and the banner says why.
  const items: [string, string, number | null][] = [
    ["Processed", "", stats ? stats.processed : null],
    ["Failed", "", stats ? stats.failed : null],
    ["Busy", "busy", stats ? stats.busy : null],
    ["Enqueued", "queues", stats ? stats.enqueued : null],
    ["Retries", "retries", stats ? stats.retries : null],
    ["Scheduled", "scheduled", stats ? stats.scheduled : null],
    ["Dead", "dead", stats ? stats.dead : null],
  ];
  return (
    <dl class="w-statsbar" aria-label="Totals">
      {items.map(([label, path, value]) => (
        <div key={label} class="w-stat" data-stat={label.toLowerCase()}>
          <dt>{path ? <Link to={path}>{label}</Link> : label}</dt>
          <dd>{formatNumber(value)}</dd>
        </div>
      ))}
      {stats && (
        <div class="w-stat" data-stat="latency">
          <dt>Latency</dt>
          <dd title="Age of the oldest job in the default queue">{formatDuration(stats.default_latency)}</dd>
        </div>
      )}
    </dl>
  );
}

function Banners() {
  const { meta } = session;
  if (meta.read_only) {
    return (
      <div class="w-banner w-banner-warning" role="note" data-banner="read-only">
        Read-only mode: changes are disabled by the server configuration.
      </div>
    );
  }
  if (!meta.can_change) {
    return (
      <div class="w-banner w-banner-info" role="note" data-banner="no-permission">
        You can look but not change anything: your account lacks the permission to change the dashboard.
      </div>
    );
  }
  return null;
}

function StatsProblems() {
  const { stats } = useStats();
  return stats ? <div class="w-stats-problems"><Problems problems={stats.problems} /></div> : null;
}

export function Layout(props: { path: string; children: ComponentChildren }) {
  useStatsPolling();
  const { meta } = session;
  const current = section(props.path);
  const user = meta.user.username;
  return (
    <div class="w-app">
      <header class="w-header">
        <div class="w-branding">
          <Link to="" class="w-brand">Wurk</Link>
          {meta.version && <span class="w-version">{meta.version}</span>}
        </div>
        <div class="w-tools">
          <PollSelect />
          <ZoneToggle />
          {user && <span class="w-user">{user}</span>}
          <a href={meta.admin_url} class="w-header-link">Django admin</a>
        </div>
      </header>
      <StatsBar />
      <nav class="w-nav" aria-label="Sections">
        {NAV.filter((item) => !item.feature || hasFeature(item.feature)).map((item) => (
          <Link key={item.path} to={item.path} class={item.path === current ? "w-tab w-tab-current" : "w-tab"}>
            {item.label}
          </Link>
        ))}
      </nav>
      <Banners />
      <StatsProblems />
      <main class="w-main" id="w-main">{props.children}</main>
      <ConfirmHost />
      <Toasts />
    </div>
  );
}
