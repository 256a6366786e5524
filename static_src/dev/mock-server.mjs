// A tiny stand-in for the Django side, for the front-end dev loop only (never used by
// tests): serves the built bundle and the API answers in dev/api-fixture.json, which
// tests/django/test_dashboard_contract.py records from the real API, so the two cannot
// drift. Times in the fixture are moved forward to today; mutations answer as recorded.
//   npm run build && node dev/mock-server.mjs [port]   →   http://127.0.0.1:8765/admin/wurk/
import { createServer } from "node:http";
import { readFileSync, existsSync } from "node:fs";
import { join, extname } from "node:path";
import { fileURLToPath } from "node:url";

const PORT = Number(process.argv[2] || 8765);
const MOUNT = "/admin/wurk/";
const OUT = fileURLToPath(new URL("../../wurk_django/static/wurk/", import.meta.url));
const FIXTURE = JSON.parse(readFileSync(new URL("./api-fixture.json", import.meta.url), "utf8"));
const READ_ONLY = process.env.MOCK_READ_ONLY === "1";
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json" };

// "GET sets/:set/:key" → a matcher; the class in "metrics/:class" may hold slashes.
const ROUTES = Object.entries(FIXTURE.responses).map(([name, answer]) => {
  const [method, pattern] = name.split(" ");
  const source = pattern.split("/").map((part) =>
    part === ":class" ? ".+" : part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("/");
  return { method, regex: new RegExp(`^${source}$`), answer };
});
// Any other mutation answers like a recorded one (the counts of one row).
const GENERIC_MUTATION = FIXTURE.responses["POST sets/:set/bulk"];

// Epoch-ms fields and sorted-set scores (seconds), moved by the time since recording.
const MS_FIELD = /(_at_ms|^server_time_ms|^beat_ms|^at_ms)$/;
function shifted(value, key, deltaMs) {
  if (Array.isArray(value)) return value.map((item) => shifted(item, key === "buckets" ? key : "", deltaMs));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shifted(v, k, deltaMs)]));
  }
  if (typeof value !== "number") return value;
  if (MS_FIELD.test(key) || key === "buckets") return value + deltaMs;
  if (key === "score") return value + deltaMs / 1000;
  return value;
}

function answer(method, path) {
  const route = ROUTES.find((r) => r.method === method && r.regex.test(path));
  const found = route?.answer ?? (method !== "GET" ? GENERIC_MUTATION : undefined);
  if (!found) return { status: 404, body: { type: "not_found", title: "Not found.", status: 404, detail: "Not in the mock's fixture." } };
  const body = shifted(found.body, "", Date.now() - FIXTURE.recorded_at_ms);
  if (path === "meta" && READ_ONLY) body.read_only = true;
  return { status: found.status, body };
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
    const { status, body } = answer(req.method, url.pathname.slice(MOUNT.length + 4));
    const type = status < 400 ? "application/json" : "application/problem+json";
    res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
    return res.end(JSON.stringify(body));
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
