/**
 * safety.safe_state.expect and verify_timeout_ms: valid forms, and every malformed expectation
 * reported once with its key path and line (both validation layers agree), as --check-config
 * prints it.
 */
import assert from "node:assert/strict";
import { formatDiagnostic } from "../../src/config/mod.ts";
import { findDeclaredTarget } from "../../src/control/mod.ts";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import { load, PROV, summary } from "./_helpers.ts";
import { runCli, withFiles } from "../helpers/cli.ts";

Deno.test("loadConfig reads safety.safe_state.expect and verify_timeout_ms", () => {
  const r = load(`
safety:
  safe_state:
    verify_timeout_ms: 500
    expect:
      - { signal: p0/motorctl0/motor1_duty, equals: 0 }
      - { signal: p0/relayio0/relay_ch1_state, equals: false }
      - { signal: p0/tempctl0/control_mode, equals: open }
      - { signal: p0/tempctl0/tc1_temp, max: 60 }
      - { signal: p0/a/b/speed, min: -1, max: 1 }
${PROV}
`);
  assert.deepEqual(summary(r), []);
  const ss = r.config!.safety.safeState;
  assert.equal(ss.verifyTimeoutMs, 500);
  assert.deepEqual(ss.expect.map((e) => [e.providerId, e.deviceId, e.signalId]), [
    ["p0", "motorctl0", "motor1_duty"],
    ["p0", "relayio0", "relay_ch1_state"],
    ["p0", "tempctl0", "control_mode"],
    ["p0", "tempctl0", "tc1_temp"],
    ["p0", "a/b", "speed"],
  ]);
  assert.equal(ss.expect[0]!.equals, 0);
  assert.equal(ss.expect[1]!.equals, false);
  assert.equal(ss.expect[2]!.equals, "open");
  assert.deepEqual([ss.expect[3]!.min, ss.expect[3]!.max], [undefined, 60]);
  assert.equal(ss.expect[4]!.path, "safety.safe_state.expect[4]");
});

Deno.test("a safe_state call to p0/x/y addresses device x/y (a device id may hold '/')", () => {
  // ADPP gives device_id no character rule and discovery skips only `.` and `..`; a provider id
  // holds no '/' (rules_test), so a handle splits at its first '/' without ambiguity.
  const r = load(`
safety:
  safe_state:
    hooks:
      - { device_handle: p0/x/y, function_name: stop }
    expect:
      - { signal: p0/x/y/speed, equals: 0 }
${PROV}
`);
  assert.deepEqual(summary(r), []);
  const call = r.config!.safety.safeState.hooks[0]!;
  assert.equal(call.deviceHandle, "p0/x/y");
  const xy = {
    device: { providerId: "p0", deviceId: "x/y" },
    functions: [{ functionId: 3, name: "stop", actuating: true, args: [] }],
  } as unknown as DeviceCapabilities;
  const other = { ...xy, device: { ...xy.device, deviceId: "x" } } as DeviceCapabilities;
  const target = findDeclaredTarget(call, [other, xy]);
  assert.ok("device" in target, JSON.stringify(target));
  assert.equal(target.device, xy);
});

const BAD: Array<{ name: string; yaml: string; expect: string[]; message?: RegExp }> = [
  {
    name: "a signal that is not provider/device/signal",
    yaml: `
safety:
  safe_state:
    expect:
      - { signal: p0/motor1_duty, equals: 0 }
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].signal @4"],
    message: /must be `provider\/device\/signal`/,
  },
  {
    name: "neither equals nor min/max",
    yaml: `
safety:
  safe_state:
    expect:
      - signal: p0/m/duty
${PROV}
`,
    expect: ["error safety.safe_state.expect[0] @4"],
    message: /needs `equals`, or `min` and\/or `max`/,
  },
  {
    name: "an empty equals (one error at the key, not also 'needs equals' at the entry)",
    yaml: `
safety:
  safe_state:
    expect:
      - signal: p0/m/duty
        equals:
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].equals @5"],
    message: /must be a bool, number or string, got an empty value/,
  },
  {
    name: "an empty bound (one error at the key)",
    yaml: `
safety:
  safe_state:
    expect:
      - signal: p0/m/duty
        max:
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].max @5"],
    message: /must be a number, got an empty value/,
  },
  {
    name: "equals together with a bound",
    yaml: `
safety:
  safe_state:
    expect:
      - { signal: p0/m/duty, equals: 0, max: 1 }
${PROV}
`,
    expect: ["error safety.safe_state.expect[0] @4"],
  },
  {
    name: "a non-numeric bound",
    yaml: `
safety:
  safe_state:
    expect:
      - { signal: p0/m/duty, min: low }
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].min @4"],
  },
  {
    name: "min above max",
    yaml: `
safety:
  safe_state:
    expect:
      - signal: p0/m/duty
        min: 2
        max: 1
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].max @6"],
  },
  {
    name: "equals that is a mapping",
    yaml: `
safety:
  safe_state:
    expect:
      - signal: p0/m/duty
        equals: {a: 1}
${PROV}
`,
    expect: ["error safety.safe_state.expect[0].equals @5"],
  },
  {
    name: "a provider that is not declared is a warning",
    yaml: `
safety:
  safe_state:
    expect:
      - { signal: ghost/m/duty, equals: 0 }
${PROV}
`,
    expect: ["warning safety.safe_state.expect[0].signal @4"],
  },
  {
    name: "verify_timeout_ms out of bounds",
    yaml: `
safety:
  safe_state:
    verify_timeout_ms: 50
${PROV}
`,
    expect: ["error safety.safe_state.verify_timeout_ms @3"],
    message: /between 100 and 30000/,
  },
  {
    name: "an unknown key in an expectation",
    yaml: `
safety:
  safe_state:
    expect:
      - { signal: p0/m/duty, equal: 0, equals: 0 }
${PROV}
`,
    expect: ["warning safety.safe_state.expect[0].equal @4"],
  },
];

for (const c of BAD) {
  Deno.test(`loadConfig reports ${c.name}`, () => {
    const r = load(c.yaml);
    assert.deepEqual(summary(r), c.expect);
    if (c.message) assert.match(r.diagnostics.map(formatDiagnostic).join("\n"), c.message);
    for (const d of r.diagnostics) assert.ok(d.column > 0, `column for ${d.path}`);
  });
}

Deno.test("runtime --check-config prints a malformed expectation as FILE:LINE:COL", async () => {
  await withFiles({
    "rig.yaml": [
      "providers: [{id: p0, command: deno}]",
      "safety:",
      "  safe_state:",
      "    expect:",
      "      - { signal: p0/motor1_duty, equals: 0 }",
      "      - { signal: p0/m/duty, min: 2, max: 1 }",
      "",
    ].join("\n"),
  }, async (dir) => {
    const r = await runCli(["--check-config", "rig.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^rig\.yaml:5:\d+: error: safety\.safe_state\.expect\[0\]\.signal: must be `provider\/device\/signal`/m,
    );
    assert.match(r.stdout, /^rig\.yaml:6:\d+: error: safety\.safe_state\.expect\[1\]\.max: /m);
  });
});
