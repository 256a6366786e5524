// Fails the build when the source could turn data into HTML: every
// untrusted value must reach the page as a text node. Run before every build.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../src", import.meta.url));
const BANNED = [
  [/dangerouslySetInnerHTML/, "dangerouslySetInnerHTML"],
  [/\.(inner|outer)HTML\b/, "innerHTML/outerHTML"],
  [/insertAdjacentHTML/, "insertAdjacentHTML"],
  [/document\.write/, "document.write"],
  [/createContextualFragment|DOMParser/, "HTML parsing"],
  [/\beval\s*\(|new\s+Function\s*\(/, "eval/new Function"],
  [/javascript:/i, "javascript: URLs"],
];

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (/\.(tsx?|jsx?|mjs)$/.test(name)) yield path;
  }
}

let failures = 0;
for (const path of files(root)) {
  readFileSync(path, "utf8").split("\n").forEach((line, i) => {
    for (const [pattern, what] of BANNED) {
      if (pattern.test(line)) {
        console.error(`${relative(process.cwd(), path)}:${i + 1}: ${what} is banned: render untrusted data as text`);
        failures++;
      }
    }
  });
}
if (failures) process.exit(1);
console.log("check-safety: no HTML sinks in src/");
