/**
 * YAML tags that make something other than a plain mapping (`!!omap` a Map, `!!set` a Set,
 * `!!timestamp` a Date, `!!binary` bytes) are refused where a mapping or a scalar is read, naming
 * what was written: a Map read as a mapping had no keys, so `polling: !!omap [...]` ran with the
 * default interval and no word.
 */
import assert from "node:assert/strict";
import { load, PROV } from "./_helpers.ts";

const errors = (yaml: string) =>
  load(yaml).diagnostics.filter((d) => d.severity === "error").map((
    d,
  ) => [d.path, d.line, d.message]);

Deno.test("loadConfig refuses an ordered map (!!omap) or a set (!!set) where a mapping is read", () => {
  assert.deepEqual(errors(`${PROV}\npolling: !!omap\n  - interval_ms: 250\n`), [
    ["polling", 2, "must be a mapping, got an ordered map (!!omap): write a plain mapping"],
  ]);
  assert.deepEqual(errors(`${PROV}\npolling: !!set\n  ? interval_ms\n`), [
    ["polling", 2, "must be a mapping, got a set (!!set)"],
  ]);
  assert.deepEqual(errors(`!!omap\n- polling: {interval_ms: 250}\n`), [
    [
      "",
      2,
      "the configuration root must be a mapping of sections, got an ordered map (!!omap): write a plain mapping",
    ],
  ]);
});

Deno.test("loadConfig names a timestamp or bytes where a string is read", () => {
  const got = errors(`${PROV}\nruntime:\n  name: !!timestamp 2001-12-14\n`);
  assert.deepEqual(got.map(([p]) => p), ["runtime.name"]);
  assert.match(String(got[0]![2]), /a timestamp \(!!timestamp\)/);
  const bytes = errors(`${PROV}\nruntime:\n  name: !!binary aGVsbG8=\n`);
  assert.match(String(bytes[0]?.[2]), /bytes \(!!binary\)/);
});
