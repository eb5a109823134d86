/**
 * Unknown keys: ignored with a warning, except under `--check-config --strict`, where each is an
 * error at its line and column (`http.auth_enable: true` once passed a strict check and the runtime
 * started with authentication off).
 */
import assert from "node:assert/strict";
import { load, PROV } from "./_helpers.ts";

const YAML = `
http:
  auth_enable: true
providers:
  - id: p0
    command: prov
    restart_policy: {enabeld: true}
safety:
  safe_state:
    hooks: [{device_handle: p0/d0, function_name: stop, argz: {}}]
${PROV.replace("providers", "extra")}
`;

/** `severity path @line:column message`, in file order. */
function diagnostics(o: { mode: "check" | "start"; strict: boolean }): string[] {
  return load(YAML, o).diagnostics.map((d) =>
    `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`
  );
}

Deno.test("loadConfig --strict makes every unknown key an error at its line and column, with the suggestion", () => {
  assert.deepEqual(diagnostics({ mode: "check", strict: true }), [
    "error http.auth_enable @2:3 unknown key 'auth_enable' (did you mean 'auth_enabled'?): " +
    "--strict refuses keys the runtime does not know (it would ignore them)",
    "error providers[0].restart_policy.enabeld @6:22 unknown key 'enabeld' (did you mean " +
    "'enabled'?): --strict refuses keys the runtime does not know (it would ignore them)",
    "error safety.safe_state.hooks[0].argz @9:57 unknown key 'argz' (did you mean 'args'?): " +
    "--strict refuses keys the runtime does not know (it would ignore them)",
    "error extra @10:1 unknown key 'extra': --strict refuses keys the runtime does not know " +
    "(it would ignore them)",
  ]);
  assert.equal(load(YAML, { mode: "check", strict: true }).config, null);
});

Deno.test("loadConfig without --strict, and at start-up, warns about unknown keys and ignores them", () => {
  for (const o of [{ mode: "check", strict: false }, { mode: "start", strict: true }] as const) {
    const got = diagnostics(o);
    assert.deepEqual(got.map((l) => l.split(" ").slice(0, 3).join(" ")), [
      "warning http.auth_enable @2:3",
      "warning providers[0].restart_policy.enabeld @6:22",
      "warning safety.safe_state.hooks[0].argz @9:57",
      "warning extra @10:1",
    ], JSON.stringify(o));
    assert.match(
      got[0]!,
      /unknown key 'auth_enable' will be ignored \(did you mean 'auth_enabled'\?\)$/,
    );
    assert.ok(load(YAML, o).config);
  }
});
