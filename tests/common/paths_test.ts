/** src/common/paths.ts against node:path's POSIX functions, which it replaces in the runtime. */
import assert from "node:assert/strict";
import { posix } from "node:path";
import { dirnameOf, pathBelow, resolvePath } from "../../src/common/mod.ts";

const DIRS = ["/", "/etc", "/etc/rig/", "/a/b/c", "/a/./b", "/a/../b", "/a//b"];
const RELS = [
  "x.yaml",
  "./x",
  "../x",
  "../../../../x",
  "a/b/../c",
  "/abs/p",
  "/abs/../p",
  ".",
  "..",
  "",
  "a//b/",
  "./providers/sim/main.ts",
];

Deno.test("resolvePath from an absolute folder equals posix.resolve", () => {
  for (const dir of DIRS) {
    for (const rel of RELS) {
      assert.strictEqual(resolvePath(dir, rel), posix.resolve(dir, rel), `${dir} + ${rel}`);
    }
  }
});

Deno.test("dirnameOf an absolute path equals posix.dirname", () => {
  for (const p of ["/", "/a", "/a/b.yaml", "/a/b/c.yaml", "/a/b/"]) {
    const expected = posix.dirname(p);
    // A trailing slash names the folder itself in posix.dirname; config paths never end in one.
    if (p.endsWith("/") && p !== "/") continue;
    assert.strictEqual(dirnameOf(p), expected, p);
  }
});

Deno.test("pathBelow gives the path relative to a folder it lies below, else null", () => {
  assert.strictEqual(pathBelow("/work", "/work/trees/a.xml"), "trees/a.xml");
  assert.strictEqual(pathBelow("/work/", "/work/a.xml"), "a.xml");
  assert.strictEqual(pathBelow("/", "/a.xml"), "a.xml");
  assert.strictEqual(pathBelow("/work", "/workshop/a.xml"), null);
  assert.strictEqual(pathBelow("/work", "/work"), null);
  assert.strictEqual(pathBelow("/work", "/other/a.xml"), null);
});
