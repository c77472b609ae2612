// Builds the console into ../adapters/web/dist (or --outdir DIR): one
// bundled, minified ES module and one stylesheet, named by their content
// hash, and an index.html that loads them. No inline script or style, so
// the server's Content-Security-Policy can forbid both. The output depends
// only on the sources and the pinned packages: adapters/web's test rebuilds
// it and compares it byte for byte with the committed bundle.
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const at = process.argv.indexOf("--outdir");
const outdir = at > 0 ? process.argv[at + 1] : join(here, "..", "adapters", "web", "dist");

const result = await esbuild.build({
  entryPoints: [join(here, "src", "main.tsx")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome120", "firefox120", "safari17"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  write: false,
  outdir: "out",
  logLevel: "warning",
});

const hashed = {};
const files = [];
for (const f of result.outputFiles) {
  const ext = f.path.endsWith(".css") ? "css" : "js";
  const name = `app-${createHash("sha256").update(f.contents).digest("hex").slice(0, 12)}.${ext}`;
  hashed[ext] = name;
  files.push([name, f.contents]);
}
const html = readFileSync(join(here, "src", "index.html"), "utf8")
  .replace("{{css}}", "/assets/" + hashed.css)
  .replace("{{js}}", "/assets/" + hashed.js);

rmSync(outdir, { recursive: true, force: true });
mkdirSync(join(outdir, "assets"), { recursive: true });
for (const [name, contents] of files) writeFileSync(join(outdir, "assets", name), contents);
writeFileSync(join(outdir, "index.html"), html);
for (const name of readdirSync(join(here, "src", "static"))) {
  writeFileSync(join(outdir, "assets", name), readFileSync(join(here, "src", "static", name)));
}
console.log(`console built into ${outdir}: ${files.map(([n, c]) => `${n} ${c.length} B`).join(", ")}`);
