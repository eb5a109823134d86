/**
 * GET /v0/audit's `origin` filter accepts every origin kind an entry can carry
 * (AUDIT_ORIGIN_KINDS); docs/http-api.md lists them for the query, and listed only seven of the
 * nine (`device_loss` and `sparkplug` missing): a client reading the docs could not filter the
 * device-loss latch's or a Sparkplug host's entries.
 */
import assert from "node:assert/strict";
import { AUDIT_ORIGIN_KINDS } from "../../src/control/mod.ts";

Deno.test("docs/http-api.md lists every origin GET /v0/audit filters on", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/http-api.md", import.meta.url));
  const at = doc.indexOf("- `origin`: `http`");
  assert.ok(at >= 0, "the audit query's origin item");
  const item = doc.slice(at, doc.indexOf("\n- ", at + 1));
  const listed = [...item.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).slice(1);
  assert.deepEqual([...listed].sort(), [...AUDIT_ORIGIN_KINDS].sort());
});
