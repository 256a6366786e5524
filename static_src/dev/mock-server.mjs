// A tiny stand-in for the Django side, for the front-end dev loop only (never used by
// tests): serves the built bundle and a fake JSON API shaped like dashboard.md §2.
//   npm run build && node dev/mock-server.mjs [port]   →   http://127.0.0.1:8765/admin/wurk/
import { createServer } from "node:http";
import { readFileSync, existsSync } from "node:fs";
import { join, extname } from "node:path";
import { fileURLToPath } from "node:url";

const PORT = Number(process.argv[2] || 8765);
const MOUNT = "/admin/wurk/";
const OUT = fileURLToPath(new URL("../../wurk_django/static/wurk/", import.meta.url));
const READ_ONLY = process.env.MOCK_READ_ONLY === "1";
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json" };

let processed = 120345;
let failed = 321;
const now = () => Date.now();
const job = (i, set) => ({
  key: `${(now() / 1000 + (set === "dead" ? -i * 60 : i * 60)).toFixed(6)}-jid${String(i).padStart(21, "0")}`,
  jid: `jid${String(i).padStart(21, "0")}`, class: i % 3 ? "shop.tasks.charge" : "HardJob",
  display_class: i % 3 ? "shop.tasks.charge" : "HardJob", queue: i % 2 ? "default" : "critical",
  score: now() / 1000 + (set === "dead" ? -i * 60 : i * 60), created_at_ms: now() - 3_600_000,
  enqueued_at_ms: now() - 3_500_000, failed_at_ms: now() - 3_000_000, retry_count: i % 5, retry: true,
  error_class: set === "scheduled" ? null : "ValueError",
  error_message: i === 1 ? "<img src=x onerror=alert(1)>" : "card declined",
  args_preview: JSON.stringify(i === 1 ? ["<img src=x onerror=alert(1)>"] : [i, 500]), args_truncated: false,
  tags: [], bid: null, encrypted: false,
});

function api(path, query, method) {
  if (method !== "GET") return { requested: 1, done: 1, missing: 0, remaining: 0 };
  if (path === "meta") return { version: "0.1.0", read_only: READ_ONLY, can_change: true, user: "demo", csrf_header: "X-CSRFToken", poll_default: 5, server_time_ms: now() };
  if (path === "stats") {
    processed += Math.floor(Math.random() * 40);
    failed += Math.floor(Math.random() * 3);
    return { processed, failed, busy: 7, processes: 2, enqueued: 1520, retries: 42, scheduled: 7, dead: 3, default_latency: 2.4,
      server_time_ms: now(), redis: { redis_version: "7.2.4", uptime_in_days: "12", connected_clients: "14", used_memory_human: "3.21M", used_memory_peak_human: "4.02M" } };
  }
  if (path === "stats/history") {
    const days = Number(query.get("days") || 30);
    const p = {}, f = {};
    for (let d = 0; d < days; d++) {
      const day = new Date(now() - d * 86400_000).toISOString().slice(0, 10);
      p[day] = 5000 + Math.round(3000 * Math.sin(d / 3)) + d * 30;
      f[day] = 40 + (d % 7) * 12;
    }
    return { processed: p, failed: f, marks: [{ at: new Date(now() - 4 * 86400_000).toISOString(), label: "v1.4.2" }] };
  }
  if (path === "processes") return { items: [
    { identity: "web-1:4242:abc", hostname: "web-1", pid: 4242, tag: "shop", labels: ["blue"], queues: ["critical", "default"], version: "0.1.0", started_at_ms: now() - 7200_000, rss: 182_000, concurrency: 10, busy: 5, quiet: false, embedded: false, stale: false },
    { identity: "web-2:777:def", hostname: "web-2", pid: 777, tag: "shop", labels: [], queues: ["low"], version: "0.1.0", started_at_ms: now() - 600_000, rss: 95_000, concurrency: 5, busy: 2, quiet: true, embedded: true, stale: false },
  ] };
  if (path === "work") return { items: [
    { identity: "web-1:4242:abc", process: "web-1:4242", tid: "t1a2", jid: "abcdef0123456789abcdef01", queue: "default", class: "shop.tasks.charge", args_preview: "[7, 500]", run_at_ms: now() - 42_000 },
  ], page: 1, count: 100, total: 1, pages: 1 };
  if (path === "queues") return { items: [
    { name: "default", size: 1200, latency: 2.4, paused: false }, { name: "critical", size: 20, latency: 0.1, paused: true }, { name: "low", size: 300, latency: 312, paused: false },
  ] };
  const queueJobs = path.match(/^queues\/([^/]+)\/jobs$/);
  if (queueJobs) return { items: [1, 2, 3].map((i) => ({ ...job(i, "queue"), raw: JSON.stringify({ jid: i }) })), page: 1, count: 25, total: 3, pages: 1 };
  const set = path.match(/^sets\/(retries|scheduled|dead)$/);
  if (set) {
    const total = { retries: 42, scheduled: 7, dead: 3 }[set[1]];
    const page = Number(query.get("page") || 1);
    const items = Array.from({ length: Math.min(25, total - (page - 1) * 25) }, (_, i) => job((page - 1) * 25 + i + 1, set[1]));
    return { items, page, count: 25, total, pages: Math.ceil(total / 25), sort: query.get("sort") || "asc", truncated: false };
  }
  const one = path.match(/^sets\/(retries|scheduled|dead)\/(.+)$/);
  if (one) return { ...job(1, one[1]), args: ["<img src=x onerror=alert(1)>", { nested: [1, 2] }], raw: "{...}", backtrace: ["app/tasks.py:12:in `charge'", "wurk/processor.py:88:in `run'"], extra: { custom: "value" }, custom_rows: [] };
  if (path === "metrics") return { period: query.get("period") || "1h", classes: [
    { class: "shop.tasks.charge", processed: 5400, failed: 12, total_ms: 812_000 }, { class: "HardJob", processed: 300, failed: 0, total_ms: 90_000 }, { class: "shop.tasks.report", processed: 20, failed: 2, total_ms: 400_000 },
  ], marks: [] };
  if (path.startsWith("metrics/")) return { processed: 5400, failed: 12, total_ms: 812_000, histogram: [["20ms", 10], ["30ms", 200], ["45ms", 1200], ["65ms", 3000], ["100ms", 800], ["150ms", 150], ["225ms", 30]],
    series: Array.from({ length: 60 }, (_, i) => ({ t: Math.floor(now() / 60000 - 60 + i) * 60, p: 80 + (i % 7) * 5, f: i % 11 === 0 ? 2 : 0 })), marks: [] };
  if (path === "periodic") return { items: [
    { lid: "a1b2", schedule: "*/5 * * * *", description: "every 5 minutes", class: "shop.tasks.cleanup", queue: "low", args: [], tz: "Europe/Paris", paused: false, last_fire_ms: now() - 120_000, next_fire_ms: now() + 180_000 },
    { lid: "c3d4", schedule: "0 3 * * *", description: "at 03:00", class: "shop.tasks.report", queue: "default", args: [1], tz: "UTC", paused: true, last_fire_ms: now() - 80_000_000, next_fire_ms: now() + 6_000_000 },
  ], now_ms: now() };
  if (path.startsWith("periodic/")) return { lid: "a1b2", schedule: "*/5 * * * *", class: "shop.tasks.cleanup", queue: "low", args: [], tz: "Europe/Paris", paused: false, last_fire_ms: now() - 120_000, next_fire_ms: now() + 180_000, history: [{ at_ms: now() - 120_000, jid: "0123456789abcdef01234567" }] };
  if (path === "batches" || path === "limiters") return { items: [], page: 1, count: 25, total: 0, pages: 1 };
  return null;
}

const shell = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Wurk</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
__ASSETS__</head><body><div id="wurk-root"></div>
<script id="wurk-config" type="application/json">{"mount": "${MOUNT}", "api": "${MOUNT}api/", "assets": "${MOUNT}static/"}</script>
</body></html>`;

function shellHtml() {
  const manifest = JSON.parse(readFileSync(join(OUT, ".vite/manifest.json"), "utf8"));
  const entry = Object.values(manifest).find((c) => c.isEntry);
  const base = MOUNT + "static/";
  const tags = [...(entry.css || []).map((f) => `<link rel="stylesheet" href="${base}${f}">`),
    ...(entry.imports || []).map((k) => `<link rel="modulepreload" href="${base}${manifest[k].file}">`),
    `<script type="module" src="${base}${entry.file}"></script>`];
  return shell.replace("__ASSETS__", tags.join("\n"));
}

createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";
  if (url.pathname.startsWith(MOUNT + "api/")) {
    const body = api(url.pathname.slice(MOUNT.length + 4), url.searchParams, req.method);
    res.writeHead(body ? 200 : 404, { "Content-Type": "application/json", "Cache-Control": "no-store" });
    return res.end(JSON.stringify(body || { type: "not_found", title: "Not found", status: 404 }));
  }
  if (url.pathname.startsWith(MOUNT + "static/")) {
    const file = join(OUT, url.pathname.slice(MOUNT.length + 7));
    if (!file.startsWith(OUT) || !existsSync(file)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { "Content-Type": TYPES[extname(file)] || "application/octet-stream" });
    return res.end(readFileSync(file));
  }
  if (url.pathname.startsWith(MOUNT)) {
    res.writeHead(200, { "Content-Type": "text/html", "Content-Security-Policy": csp });
    return res.end(shellHtml());
  }
  res.writeHead(302, { Location: MOUNT });
  res.end();
}).listen(PORT, "127.0.0.1", () => console.log(`mock dashboard on http://127.0.0.1:${PORT}${MOUNT}`));
