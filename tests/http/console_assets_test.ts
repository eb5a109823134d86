/**
 * The embedded console (src/http/_console_assets.js) is exactly what `deno task console:build`
 * makes of console/ today, fits the size budget, and the page refers only to files it serves and
 * to nothing its Content-Security-Policy would block (inline script or style, handlers).
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { CONSOLE_ASSETS } from "../../src/http/_console_assets.js";
import {
  buildConsoleAssets,
  CONSOLE_ASSETS_TYPES,
  CONSOLE_GZIP_BUDGET_BYTES,
  consoleAssetsTypes,
  etagOf,
  gzipTotalBytes,
} from "../../scripts/gen_console_assets.ts";

const STALE = "src/http/_console_assets.js is out of date: run `deno task console:build`";

Deno.test("_console_assets.js holds exactly the current console/ files (deno task console:build)", async () => {
  const built = await buildConsoleAssets();
  // The gzip bytes may differ between zlib versions; what they decompress to may not.
  const shape = (a: { path: string; contentType: string; etag: string; text: string }) => ({
    path: a.path,
    contentType: a.contentType,
    etag: a.etag,
    text: a.text,
  });
  assert.deepEqual(CONSOLE_ASSETS.map(shape), built.map(shape), STALE);
  for (const a of CONSOLE_ASSETS) {
    const bytes = Uint8Array.from(atob(a.gzipBase64), (c) => c.charCodeAt(0));
    assert.equal(new TextDecoder().decode(gunzipSync(bytes)), a.text, `${a.path}: ${STALE}`);
    assert.equal(a.etag, await etagOf(new TextEncoder().encode(a.text)), a.path);
  }
  assert.ok(
    Deno.readTextFileSync(CONSOLE_ASSETS_TYPES) === consoleAssetsTypes(),
    "src/http/_console_assets.d.ts is out of date: run `deno task console:build`",
  );
});

Deno.test("the console's files fit the 150 KB gzip budget", () => {
  const total = gzipTotalBytes(CONSOLE_ASSETS);
  assert.equal(CONSOLE_GZIP_BUDGET_BYTES, 150 * 1024);
  assert.ok(total > 0);
  assert.ok(total <= CONSOLE_GZIP_BUDGET_BYTES, `${total} bytes gzip`);
});

Deno.test("the console refers only to files it serves, by absolute path or sibling module", () => {
  const served = new Set(CONSOLE_ASSETS.map((a) => a.path));
  const html = CONSOLE_ASSETS.find((a) => a.path === "/")?.text ?? "";
  const refs = [...html.matchAll(/\b(?:src|href)="([^"#][^"]*)"/g)].map((m) => m[1]);
  assert.deepEqual(refs.sort(), ["/app.js", "/favicon.svg", "/style.css", "/uplot.css"]);
  for (const ref of refs) assert.ok(served.has(ref!), ref);
  for (const a of CONSOLE_ASSETS.filter((x) => x.path.endsWith(".js"))) {
    for (const m of a.text.matchAll(/^import .* from "([^"]+)";$/gm)) {
      assert.match(m[1]!, /^\.\/[a-z_]+\.js$/, `${a.path} imports ${m[1]}`);
      assert.ok(served.has(m[1]!.slice(1)), `${a.path} imports ${m[1]}, which is not served`);
    }
  }
});

Deno.test("the console has nothing its CSP blocks and builds no HTML from text", () => {
  const html = CONSOLE_ASSETS.find((a) => a.path === "/")?.text ?? "";
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, "inline <script>");
  assert.doesNotMatch(html, /<style/, "inline <style>");
  assert.doesNotMatch(html, /\sstyle=/, "style attribute");
  assert.doesNotMatch(html, /\son[a-z]+=/, "inline event handler");
  for (const a of CONSOLE_ASSETS.filter((x) => x.path.endsWith(".js"))) {
    assert.doesNotMatch(a.text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, a.path);
    assert.doesNotMatch(a.text, /\beval\(|new Function\(/, a.path);
    assert.doesNotMatch(a.text, /setAttribute\("style"/, a.path);
  }
});
