/**
 * `alarms:` and `interlocks:`: valid forms, every malformed entry reported with its key path and
 * line (both validation layers agree), and a malformed condition as --check-config prints it.
 */
import assert from "node:assert/strict";
import {
  formatDiagnostic,
  MAX_ALARM_DELAY_MS,
  MAX_ALARM_MESSAGE_LENGTH,
  MAX_ALARMS,
  MAX_INTERLOCK_BLOCK_ENTRIES,
  MAX_INTERLOCKS,
} from "../../src/config/mod.ts";
import { load, PROV, summary } from "./_helpers.ts";
import { runCli, withFiles } from "../helpers/cli.ts";

Deno.test("loadConfig reads alarms with their defaults and interlocks with their parsed condition", () => {
  const r = load(`
alarms:
  - id: tc1_high
    signal: p0/tempctl0/tc1_temp
    lolo: -10
    lo: 0
    hi: 70.5
    hihi: 90
    hysteresis: 2
    delay_ms: ${MAX_ALARM_DELAY_MS}
    on_bad_quality: ignore
    action: fault
    message: Heater hot
  - id: relay.on-1
    signal: p0/a/b/relay_state
    alarm_when: true
    level: MINOR
  - { id: mode, signal: p0/tempctl0/control_mode, alarm_when: closed, action: estop }
interlocks:
  - id: motor_hot
    block: [p0/motorctl0/set_motor_duty, p0/relayio0/*]
    while: p0/tempctl0/tc1_temp > 80 or bad(p0/tempctl0/tc2_temp)
    message: Motors stay put while hot
${PROV}
`);
  assert.deepEqual(summary(r), ["warning alarms[0].on_bad_quality @10"]);
  const [a, b, c] = r.config!.alarms;
  assert.deepEqual(a, {
    id: "tc1_high",
    signal: "p0/tempctl0/tc1_temp",
    providerId: "p0",
    deviceId: "tempctl0",
    signalId: "tc1_temp",
    limits: { lolo: -10, lo: 0, hi: 70.5, hihi: 90 },
    level: "MAJOR",
    hysteresis: 2,
    delayMs: MAX_ALARM_DELAY_MS,
    onBadQuality: "ignore",
    action: "fault",
    message: "Heater hot",
    path: "alarms[0]",
  });
  assert.deepEqual(
    [b!.deviceId, b!.alarmWhen, b!.level, b!.hysteresis, b!.delayMs, b!.onBadQuality, b!.action],
    ["a/b", true, "MINOR", 0, 0, "alarm", "none"],
  );
  assert.deepEqual(b!.limits, {});
  assert.deepEqual([c!.alarmWhen, c!.level, c!.action, c!.message], [
    "closed",
    "MAJOR",
    "estop",
    "",
  ]);
  const [il] = r.config!.interlocks;
  assert.deepEqual(il!.block, [
    {
      handle: "p0/motorctl0/set_motor_duty",
      providerId: "p0",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
    },
    { handle: "p0/relayio0/*", providerId: "p0", deviceId: "relayio0", functionName: "*" },
  ]);
  assert.equal(il!.conditionText, "p0/tempctl0/tc1_temp > 80 or bad(p0/tempctl0/tc2_temp)");
  assert.equal(il!.condition.kind, "or");
  assert.deepEqual(il!.signals.map((s) => s.handle), [
    "p0/tempctl0/tc1_temp",
    "p0/tempctl0/tc2_temp",
  ]);
  assert.equal(il!.message, "Motors stay put while hot");
  assert.equal(il!.path, "interlocks[0]");
});

Deno.test("the warning for an alarm that stops the machine but ignores bad input says what it means", () => {
  const r = load(`
alarms:
  - { id: a, signal: p0/d/s, hi: 1, action: estop, on_bad_quality: ignore }
${PROV}
`);
  assert.match(
    r.diagnostics.map(formatDiagnostic).join("\n"),
    /alarms\[0\]\.on_bad_quality: is ignore on an alarm with action estop: a dead or stale sensor will never stop the machine/,
  );
});

const BAD: Array<{ name: string; yaml: string; expect: string[]; message?: RegExp }> = [
  {
    name: "duplicate alarm ids",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hi: 1 }
  - { id: a, signal: p0/d/s, lo: 1 }
${PROV}
`,
    expect: ["error alarms[1].id @3"],
    message: /duplicate id 'a' \(first at alarms\[0\]\)/,
  },
  {
    name: "an id that cannot be a URL segment",
    yaml: `
alarms:
  - { id: "tc 1/hot", signal: p0/d/s, hi: 1 }
  - { id: "..", signal: p0/d/s, hi: 1 }
  - { id: "${"x".repeat(65)}", signal: p0/d/s, hi: 1 }
  - { id: "${"x".repeat(64)}", signal: p0/d/s, hi: 1 }
${PROV}
`,
    expect: ["error alarms[0].id @2", "error alarms[1].id @3", "error alarms[2].id @4"],
    message: /is not an id: use 1 to 64 letters, digits, '_', '.' or '-', not starting with '.'/,
  },
  {
    name: "an integer limit a double cannot hold (beyond 2^53); one it holds exactly is kept",
    yaml: `
alarms:
  - { id: a, signal: p0/d/count, hi: 9007199254740993 }
  - { id: b, signal: p0/d/count, hi: 9007199254740992, hihi: 18446744073709551616 }
  - { id: c, signal: p0/d/count, lo: -9007199254740995, hi: 1e300 }
${PROV}
`,
    expect: ["error alarms[0].hi @2", "error alarms[2].lo @4"],
    message:
      /alarms\[0\]\.hi: 9007199254740993 cannot be held exactly \(a limit is a double, exact to \+\/-2\^53\): write 9007199254740992 or compare exactly in an interlock condition\n/,
  },
  {
    name: "limits out of order (each given pair: lolo < lo < hi < hihi)",
    yaml: `
alarms:
  - id: a
    signal: p0/d/s
    lolo: 5
    lo: 5
    hi: 20
    hihi: 19
${PROV}
`,
    expect: ["error alarms[0].hihi @7", "error alarms[0].lo @5"],
    message: /alarms\[0\]\.lo: must be greater than lolo \(5 <= 5\)/,
  },
  {
    name: "a limit that is not a number",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hi: "80" }
${PROV}
`,
    expect: ["error alarms[0].hi @2"],
    message: /hi: must be a number, got "80"/,
  },
  {
    name: "an alarm without any limit",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hysteresis: 1 }
${PROV}
`,
    expect: ["error alarms[0] @2"],
    message: /needs at least one limit \(hihi, hi, lo, lolo\) or alarm_when/,
  },
  {
    name: "alarm_when with limits",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hi: 1, alarm_when: true }
${PROV}
`,
    expect: ["error alarms[0].alarm_when @2"],
    message: /give either alarm_when or numeric limits/,
  },
  {
    name: "alarm_when that is a number",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, alarm_when: 3 }
${PROV}
`,
    expect: ["error alarms[0].alarm_when @2"],
    message: /must be a bool or a string/,
  },
  {
    name: "level on a limit alarm, hysteresis on an alarm_when alarm",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hi: 1, level: MINOR }
  - { id: b, signal: p0/d/s, alarm_when: open, hysteresis: 1 }
${PROV}
`,
    expect: ["error alarms[0].level @2", "error alarms[1].hysteresis @3"],
    message: /level: applies to alarm_when alarms only/,
  },
  {
    name: "a hysteresis that leaves no value at which the alarm clears",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, lo: 10, hi: 20, hysteresis: 5 }
  - { id: b, signal: p0/d/s, lo: 10, hi: 20, hysteresis: 4.9 }
${PROV}
`,
    expect: ["error alarms[0].hysteresis @2"],
    message:
      /5 leaves no value at which the alarm clears: hi - hysteresis \(15\) must stay above lo \+ hysteresis \(15\)/,
  },
  {
    name: "a negative hysteresis, delay_ms out of bounds, unknown action and policy",
    yaml: `
alarms:
  - id: a
    signal: p0/d/s
    hi: 1
    hysteresis: -1
    delay_ms: ${MAX_ALARM_DELAY_MS + 1}
    action: stop
    on_bad_quality: warn
${PROV}
`,
    expect: [
      "error alarms[0].action @7",
      "error alarms[0].delay_ms @6",
      "error alarms[0].hysteresis @5",
      "error alarms[0].on_bad_quality @8",
    ],
    message: /action: must be one of none, fault, estop, got "stop"/,
  },
  {
    name: "a signal that is not provider/device/signal, or names an undeclared provider",
    yaml: `
alarms:
  - { id: a, signal: p0/s, hi: 1 }
  - { id: b, signal: ghost/d/s, hi: 1 }
${PROV}
`,
    expect: ["error alarms[0].signal @2", "error alarms[1].signal @3"],
    message: /alarms\[1\]\.signal: provider "ghost" is not declared in providers/,
  },
  {
    name: "an alarm message that is too long",
    yaml: `
alarms:
  - { id: a, signal: p0/d/s, hi: 1, message: "${"x".repeat(MAX_ALARM_MESSAGE_LENGTH + 1)}" }
${PROV}
`,
    expect: ["error alarms[0].message @2"],
    message: new RegExp(`is ${MAX_ALARM_MESSAGE_LENGTH + 1} characters long, at most 256`),
  },
  {
    name: "an interlock without block, while or message",
    yaml: `
interlocks:
  - id: i
${PROV}
`,
    expect: [
      "error interlocks[0].block @2",
      "error interlocks[0].message @2",
      "error interlocks[0].while @2",
    ],
  },
  {
    name: "malformed block entries",
    yaml: `
interlocks:
  - id: i
    block: [p0/motorctl0, ghost/m/f, 7]
    while: p0/d/s > 1
    message: m
${PROV}
`,
    expect: [
      "error interlocks[0].block[0] @3",
      "error interlocks[0].block[1] @3",
      "error interlocks[0].block[2] @3",
    ],
  },
  {
    name: "an empty block list",
    yaml: `
interlocks:
  - { id: i, block: [], while: "p0/d/s > 1", message: m }
${PROV}
`,
    expect: ["error interlocks[0].block @2"],
  },
  {
    name: "a condition that is not a string",
    yaml: `
interlocks:
  - { id: i, block: [p0/d/f], while: true, message: m }
${PROV}
`,
    expect: ["error interlocks[0].while @2"],
    message: /while: must be a condition \(a string\), got true \(quote it: "true"\)/,
  },
  {
    name: "a condition naming an undeclared provider",
    yaml: `
interlocks:
  - { id: i, block: [p0/d/f], while: "p0/d/s > 1 or ghost/d/s > 2", message: m }
${PROV}
`,
    expect: ["error interlocks[0].while @2"],
    message: /column 15 of the condition: provider "ghost" of ghost\/d\/s is not declared/,
  },
  {
    name: "duplicate interlock ids",
    yaml: `
interlocks:
  - { id: i, block: [p0/d/f], while: "p0/d/s > 1", message: m }
  - { id: i, block: [p0/d/f], while: "p0/d/s > 2", message: m }
${PROV}
`,
    expect: ["error interlocks[1].id @3"],
  },
];

for (const c of BAD) {
  Deno.test(`loadConfig reports ${c.name}`, () => {
    const r = load(c.yaml);
    assert.deepEqual(summary(r), c.expect);
    assert.equal(r.config, c.expect.some((e) => e.startsWith("error")) ? null : r.config);
    if (c.message) assert.match(r.diagnostics.map(formatDiagnostic).join("\n"), c.message);
    for (const d of r.diagnostics) assert.ok(d.column > 0, `column for ${d.path}`);
  });
}

Deno.test("an alarm or interlock message is bounded in characters, as the editor schema counts them, not in UTF-16 units", () => {
  // U+1F525, one character written as two UTF-16 units.
  const fire = "\u{1F525}";
  const at = fire.repeat(MAX_ALARM_MESSAGE_LENGTH);
  const r = load(`
alarms:
  - { id: a, signal: p0/d/s, hi: 1, message: "${at}" }
interlocks:
  - { id: i, block: [p0/d/f], while: "p0/d/s > 1", message: "${at}" }
${PROV}
`);
  assert.deepEqual(summary(r), [], r.diagnostics.map((d) => d.message).join("\n"));
  const over = load(`
alarms:
  - { id: a, signal: p0/d/s, hi: 1, message: "${at}${fire}" }
${PROV}
`);
  assert.deepEqual(summary(over), ["error alarms[0].message @2"]);
  assert.match(
    formatDiagnostic(over.diagnostics[0]!),
    new RegExp(`is ${MAX_ALARM_MESSAGE_LENGTH + 1} characters long, at most 256`),
  );
});

Deno.test("loadConfig bounds the number of alarms, of interlocks and of block entries", () => {
  const alarms = (n: number) =>
    `alarms:\n${
      Array.from({ length: n }, (_, i) => `  - { id: a${i}, signal: p0/d/s, hi: 1 }`).join("\n")
    }\n${PROV}\n`;
  assert.deepEqual(summary(load(alarms(MAX_ALARMS))), []);
  assert.equal(load(alarms(MAX_ALARMS)).config!.alarms.length, MAX_ALARMS);
  const tooMany = load(alarms(MAX_ALARMS + 1));
  assert.deepEqual(summary(tooMany), ["error alarms @1"]);
  assert.match(tooMany.diagnostics[0]!.message, /has 1001 entries, at most 1000 \(MAX_ALARMS\)/);

  const interlocks = (n: number) =>
    `interlocks:\n${
      Array.from(
        { length: n },
        (_, i) => `  - { id: i${i}, block: [p0/d/f], while: "p0/d/s > 1", message: m }`,
      ).join("\n")
    }\n${PROV}\n`;
  assert.deepEqual(summary(load(interlocks(MAX_INTERLOCKS))), []);
  assert.deepEqual(summary(load(interlocks(MAX_INTERLOCKS + 1))), ["error interlocks @1"]);

  const blocks = (n: number) =>
    `interlocks:\n  - id: i\n    while: "p0/d/s > 1"\n    message: m\n    block: [${
      Array.from({ length: n }, (_, i) => `p0/d/f${i}`).join(", ")
    }]\n${PROV}\n`;
  assert.deepEqual(summary(load(blocks(MAX_INTERLOCK_BLOCK_ENTRIES))), []);
  const tooLong = load(blocks(MAX_INTERLOCK_BLOCK_ENTRIES + 1));
  assert.deepEqual(summary(tooLong), ["error interlocks[0].block @5"]);
  assert.match(tooLong.diagnostics[0]!.message, /has 65 entries, at most 64/);
});

Deno.test("a malformed condition is reported at its key's line:col with the column inside the condition", () => {
  const r = load(`
interlocks:
  - id: motor_hot
    block: [p0/motorctl0/set_motor_duty]
    while: p0/tempctl0/tc1_temp => 80
    message: hot
${PROV}
`);
  assert.equal(r.config, null);
  assert.deepEqual(r.diagnostics.map(formatDiagnostic), [
    "/etc/rig/runtime.yaml:4:5: error: interlocks[0].while: column 22 of the condition: " +
    "unknown operator '=>' (comparisons: < <= > >= == !=; combine with and, or, not)",
  ]);
});

Deno.test("runtime --check-config fails on a malformed condition and prints its FILE:LINE:COL", async () => {
  await withFiles({
    "rig.yaml": [
      "providers: [{id: p0, command: deno}]",
      "interlocks:",
      "  - id: motor_hot",
      "    block: [p0/motorctl0/set_motor_duty]",
      "    message: Motors stay put while hot",
      "    while: p0/tempctl0/tc1_temp > 80 and (p0/tempctl0/control_mode == 'open'",
      "alarms:",
      "  - { id: hot, signal: p0/tempctl0/tc1_temp, hi: 80, hihi: 70 }",
      "",
    ].join("\n"),
  }, async (dir) => {
    const r = await runCli(["--check-config", "rig.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^rig\.yaml:6:5: error: interlocks\[0\]\.while: column 66 of the condition: expected '\)' to close '\(' at column 31, got the end of the condition$/m,
    );
    assert.match(
      r.stdout,
      /^rig\.yaml:8:\d+: error: alarms\[0\]\.hihi: must be greater than hi \(70 <= 80\)/m,
    );
    assert.match(r.stdout, /rig\.yaml: 2 errors, 0 warnings/);
  });
});
