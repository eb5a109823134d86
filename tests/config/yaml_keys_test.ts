import assert from "node:assert/strict";
import { load, PROV } from "./_helpers.ts";

for (const [name, line] of [["an empty key", ": 500"], ["a null key", "~: 500"]]) {
  Deno.test(`loadConfig reports ${name} at its own line and column, not its section's`, () => {
    const { diagnostics } = load(`${PROV}\npolling:\n  ${line}\n`);
    assert.deepEqual(
      diagnostics.map((d) => [d.severity, d.line, d.column, d.message]),
      [["warning", 3, 3, "unknown key '' will be ignored"]],
    );
  });
}

Deno.test("loadConfig refuses a key that is a mapping at that key, and the YAML library prints nothing", () => {
  const printed: unknown[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void printed.push(args);
  let result;
  try {
    result = load(`${PROV}\npolling:\n  ? {a: 1}\n  : 5\n`);
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(printed, []);
  assert.equal(result.config, null);
  assert.deepEqual(
    result.diagnostics.map((d) => [d.severity, d.path, d.line, d.column, d.message]),
    [["error", "polling", 3, 5, "a key must be a plain name, got a mapping"]],
  );
});
