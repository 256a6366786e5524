// Checks a built bundle and prints its weight:
// - every file under assets/ is `<name>-<8-char hash>.<ext>`, no file outside is;
// - .vite/manifest.json exists and names one entry;
// - the JavaScript of a first page load (the entry, its imports, and the heaviest page
//   with its imports) is at most 100 KB gzipped.
// Usage: node scripts/verify-bundle.mjs [bundle dir]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const BUDGET = 100 * 1024;
const HASHED = /^[^/]+-[A-Za-z0-9_-]{8}\.[A-Za-z0-9.]+$/;
const out = process.argv[2] || fileURLToPath(new URL("../../wurk_django/static/wurk", import.meta.url));
const problems = [];

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield relative(out, path);
  }
}

for (const file of walk(out)) {
  const inAssets = file.startsWith("assets/");
  const name = inAssets ? file.slice("assets/".length) : file.split("/").pop();
  if (inAssets && !HASHED.test(name)) problems.push(`${file}: under assets/ without a content hash`);
  if (!inAssets && HASHED.test(name)) problems.push(`${file}: looks hashed but sits outside assets/`);
}

const manifest = JSON.parse(readFileSync(join(out, ".vite/manifest.json"), "utf8"));
const entries = Object.keys(manifest).filter((k) => manifest[k].isEntry);
if (entries.length !== 1) problems.push(`manifest: expected one entry, found ${entries.length}`);
const gz = (file) => gzipSync(readFileSync(join(out, file)), { level: 9 }).length;
const size = (keys) => [...keys].reduce((n, k) => n + gz(manifest[k].file), 0);

function closure(key, seen) {
  if (!seen.has(key)) {
    seen.add(key);
    for (const dep of manifest[key].imports || []) closure(dep, seen);
  }
  return seen;
}

const entry = closure(entries[0], new Set());
let first = { name: "no page", keys: entry };
for (const key of manifest[entries[0]].dynamicImports || []) {
  const keys = closure(key, new Set(entry));
  if (size(keys) > size(first.keys)) first = { name: manifest[key].name || key, keys };
}
const total = size(first.keys);
const all = Object.values(manifest).filter((c) => c.file.endsWith(".js")).reduce((n, c) => n + gz(c.file), 0);
console.log(`bundle: first page load ${(total / 1024).toFixed(1)} KB of JavaScript gzipped ` +
  `(entry + heaviest page, ${first.name}; budget 100 KB); every chunk together ${(all / 1024).toFixed(1)} KB`);
if (total > BUDGET) problems.push(`first load is over the 100 KB budget`);
for (const p of problems) console.error("verify-bundle: " + p);
process.exit(problems.length ? 1 : 0);
