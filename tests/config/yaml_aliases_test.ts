import assert from "node:assert/strict";
import { load } from "./_helpers.ts";

Deno.test("loadConfig reports an alias whose anchor is not defined at the alias, naming its key", () => {
  const result = load(`
providers:
  - id: p0
    command: prov
    restart_policy: &policy {enabled: false}
  - id: p1
    command: prov
    restart_policy: *polcy
`);
  assert.equal(result.config, null);
  assert.deepEqual(
    result.diagnostics.map((d) => [d.severity, d.path, d.line, d.column, d.message]),
    [[
      "error",
      "providers[1].restart_policy",
      7,
      21,
      "alias *polcy names no anchor defined before it (&polcy)",
    ]],
  );
});

Deno.test("loadConfig reports an alias used before its anchor at the alias", () => {
  const result = load(`
polling: *p
logging: &p {level: info}
providers: [{id: p0, command: prov}]
`);
  assert.equal(result.config, null);
  assert.deepEqual(
    result.diagnostics.map((d) => [d.path, d.line, d.column]),
    [["polling", 1, 10]],
  );
});

Deno.test("loadConfig reports an alias inside the node its anchor names (a recursive structure) at the alias, instead of walking it forever", () => {
  const result = load(`
logging: {level: info}
providers:
  - &p0
    id: p0
    command: prov
    args: [*p0]
`);
  assert.equal(result.config, null);
  assert.deepEqual(
    result.diagnostics.map((d) => [d.severity, d.path, d.line, d.column, d.message]),
    [[
      "error",
      "providers[0].args[0]",
      6,
      12,
      "alias *p0 is inside the node its anchor names (&p0): a recursive structure is not allowed",
    ]],
  );
});
