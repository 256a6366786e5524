// Builds the dashboard into the Django package: hashed files under
// assets/, public/ files at the root with stable names, and .vite/manifest.json so the
// shell view can find the entry without HTTP.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./", // chunk and CSS URLs relative to each other: any mount works
  publicDir: "public",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../wurk_django/static/wurk",
    emptyOutDir: true,
    manifest: true,
    sourcemap: false, // Django's manifest storage fails collectstatic on missing maps
    modulePreload: { polyfill: false }, // every supported browser has modulepreload
    target: "es2022",
    reportCompressedSize: false, // scripts/report-size.mjs prints the figure that matters
    rolldownOptions: {
      input: { wurk: "src/main.tsx" },
      output: {
        entryFileNames: "assets/[name]-[hash].js",
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/[name]-[hash][extname]",
      },
    },
  },
});
