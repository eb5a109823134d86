/**
 * ProviderSession discovery over the programmable provider: a DescribeDevice answered with an
 * error skips that device with a warning, warnings quote ids and messages cut to a bound, and a
 * provider that describes no device at all does not start -- unless it says its host is not ready
 * (WaitReady `host_check: unmet`): then it stays up without devices until a restart finds them.
 * A list of more than MAX_DEVICES_PER_PROVIDER devices is refused as a whole, at start-up and at
 * a restart alike; a device declaring more than MAX_SIGNALS_PER_DEVICE signals or
 * MAX_FUNCTIONS_PER_DEVICE functions is skipped with a warning, the others kept, as is a device
 * whose id or one of whose signal ids holds a control character.
 */
import assert from "node:assert/strict";
import { hasControlCharacter, RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  MAX_DEVICES_PER_PROVIDER,
  MAX_FUNCTIONS_PER_DEVICE,
  MAX_SIGNALS_PER_DEVICE,
  ProviderRegistry,
} from "../../src/providers/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  dbl,
  type Inventory,
  programmableProvider,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";

const SIGNALS = [{ id: "x", type: T.DOUBLE }];

Deno.test("Discovery skips a device whose DescribeDevice fails, with a warning, and keeps the others", async () => {
  const fx = await startProgrammable({
    list: ["a", "missing", "b"],
    devices: { a: { signals: SIGNALS }, b: { signals: SIGNALS } },
  });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["a", "b"]);
    assert.deepEqual(fx.host.session!.discoveryWarnings, [
      'DescribeDevice "missing" failed: provider answered NOT_FOUND: missing; device skipped',
    ]);
    assert.deepEqual(fx.cache.discoveryWarnings("p0"), fx.host.session!.discoveryWarnings);
    assert.ok(
      fx.lines.some((l) =>
        /^WARN .*\[p0\] discovery: DescribeDevice "missing" failed: .*; device skipped$/.test(l)
      ),
    );
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery warnings quote at most 80 characters of an id and 300 of the reason", async () => {
  const long = "L".repeat(400);
  const fx = await startProgrammable({ list: ["a", long], devices: { a: { signals: SIGNALS } } });
  try {
    const [w] = fx.host.session!.discoveryWarnings;
    const why = `DescribeDevice "${"L".repeat(80)}…" failed: provider answered NOT_FOUND: ${long}`;
    assert.equal(w, `${why.slice(0, 300)}…; device skipped`);
  } finally {
    await fx.close();
  }
});

Deno.test("A provider that describes no device does not start", async () => {
  const inventory: Inventory = { list: ["ghost"], devices: {} };
  await assert.rejects(startProgrammable(inventory), (e) => {
    assert.ok(e instanceof RuntimeError);
    assert.equal(e.code, "UNAVAILABLE");
    assert.equal(e.message, "provider start failed: p0: provider described no devices");
    return true;
  });
  await assert.rejects(
    startProgrammable({ devices: {} }),
    /provider start failed: p0: provider described no devices$/,
  );
});

/** An inventory of `n` devices `d0`, `d1`, ... of one signal each, listed in that order. */
function manyDevices(n: number): Inventory {
  const ids = Array.from({ length: n }, (_, i) => `d${i}`);
  return { devices: Object.fromEntries(ids.map((id) => [id, { signals: SIGNALS }])) };
}

Deno.test("A ListDevices of more than MAX_DEVICES_PER_PROVIDER devices is refused as a whole, before any DescribeDevice", async () => {
  const described = await Deno.makeTempFile();
  try {
    const over = MAX_DEVICES_PER_PROVIDER + 1;
    await assert.rejects(
      startProgrammable({ ...manyDevices(over), describedFile: described }),
      (e) => {
        assert.ok(e instanceof RuntimeError);
        assert.equal(e.code, "UNAVAILABLE");
        assert.equal(
          e.message,
          `provider start failed: p0: ListDevices listed ${over} devices, more than ` +
            `MAX_DEVICES_PER_PROVIDER (${MAX_DEVICES_PER_PROVIDER}): the inventory is refused`,
        );
        return true;
      },
    );
    assert.equal(await Deno.readTextFile(described), "", "no DescribeDevice was sent");
  } finally {
    await Deno.remove(described);
  }
});

Deno.test("A ListDevices of exactly MAX_DEVICES_PER_PROVIDER devices is taken whole", async () => {
  const fx = await startProgrammable(manyDevices(MAX_DEVICES_PER_PROVIDER));
  try {
    const ids = fx.registry.devices().map((d) => d.deviceId);
    assert.equal(ids.length, MAX_DEVICES_PER_PROVIDER);
    assert.equal(ids.at(-1), `d${MAX_DEVICES_PER_PROVIDER - 1}`);
  } finally {
    await fx.close();
  }
});

Deno.test("A restart whose ListDevices lists more than MAX_DEVICES_PER_PROVIDER devices fails as an attempt, logged naming the count and the bound; the circuit opens", async () => {
  const fx = await startProgrammable(manyDevices(1), {
    restart: { maxAttempts: 2, backoffMs: [0, 0] },
  });
  try {
    const over = MAX_DEVICES_PER_PROVIDER + 1;
    await fx.setInventory(manyDevices(over));
    fx.kill();
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN", 20_000);
    const failures = fx.lines.filter((l) => /restart attempt \d failed/.test(l));
    assert.equal(failures.length, 2, fx.lines.join("\n"));
    for (const l of failures) {
      assert.match(
        l,
        new RegExp(
          `^ERROR .*\\[p0\\] restart attempt \\d failed: ListDevices listed ${over} devices, ` +
            `more than MAX_DEVICES_PER_PROVIDER \\(${MAX_DEVICES_PER_PROVIDER}\\): ` +
            `the inventory is refused$`,
        ),
      );
    }
    assert.equal(fx.host.available, false);
  } finally {
    await fx.close();
  }
});

/** `n` double signals `s0`, `s1`, ... */
const manySignals = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `s${i}`, type: T.DOUBLE }));
/**
 * Functions beyond the programmable provider's own two (`program`, `stats`: ids 1 and 2) so that
 * the device declares `n` in all.
 */
const manyFunctions = (n: number) =>
  Array.from({ length: n - 2 }, (_, i) => ({
    function_id: i + 3,
    name: `f${i + 3}`,
    policy: { category: 1 },
    args: [],
  }));

Deno.test("Discovery skips a device declaring more than MAX_SIGNALS_PER_DEVICE signals or MAX_FUNCTIONS_PER_DEVICE functions, naming it, the count and the bound; the others are kept", async () => {
  const signals = MAX_SIGNALS_PER_DEVICE + 1;
  const functions = MAX_FUNCTIONS_PER_DEVICE + 1;
  const fx = await startProgrammable({
    list: ["a", "signals", "functions", "b"],
    devices: {
      a: { signals: SIGNALS },
      signals: { signals: manySignals(signals) },
      functions: { signals: SIGNALS, functions: manyFunctions(functions) },
      b: { signals: SIGNALS },
    },
  });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["a", "b"]);
    const warnings = [
      `DescribeDevice "signals" declares ${signals} signals, more than MAX_SIGNALS_PER_DEVICE ` +
      `(${MAX_SIGNALS_PER_DEVICE}); device skipped`,
      `DescribeDevice "functions" declares ${functions} functions, more than ` +
      `MAX_FUNCTIONS_PER_DEVICE (${MAX_FUNCTIONS_PER_DEVICE}); device skipped`,
    ];
    assert.deepEqual(fx.host.session!.discoveryWarnings, warnings);
    assert.deepEqual(fx.cache.discoveryWarnings("p0"), warnings);
    for (const w of warnings) assert.ok(fx.lines.some((l) => l.endsWith(`discovery: ${w}`)));
  } finally {
    await fx.close();
  }
});

Deno.test("A device declaring exactly MAX_SIGNALS_PER_DEVICE signals and MAX_FUNCTIONS_PER_DEVICE functions is kept whole", async () => {
  const fx = await startProgrammable({
    devices: {
      a: {
        signals: manySignals(MAX_SIGNALS_PER_DEVICE),
        functions: manyFunctions(MAX_FUNCTIONS_PER_DEVICE),
      },
    },
  });
  try {
    const [caps] = fx.registry.devices().map((d) => fx.registry.capabilities("p0", d.deviceId));
    assert.equal(caps?.signals.length, MAX_SIGNALS_PER_DEVICE);
    assert.equal(caps?.functions.length, MAX_FUNCTIONS_PER_DEVICE);
    assert.deepEqual(fx.host.session!.discoveryWarnings, []);
  } finally {
    await fx.close();
  }
});

/** Hello advertising WaitReady, answered with these diagnostics. */
const ready = (diagnostics: Record<string, string>) => ({
  hello: { metadata: { supports_wait_ready: "true" } },
  waitReady: { diagnostics },
});

Deno.test("A provider with no device whose host check says ok, or says nothing, still does not start", async () => {
  const said: Record<string, string>[] = [{ host_check: "ok" }, { init_time_ms: "1" }];
  for (const diagnostics of said) {
    await assert.rejects(
      startProgrammable({ ...ready(diagnostics), devices: {} }),
      /provider start failed: p0: provider described no devices$/,
      JSON.stringify(diagnostics),
    );
  }
});

Deno.test("A provider reporting unmet host requirements stays up without devices; a restart once the host is ready finds them", async () => {
  const unmet = ready({ host_check: "unmet", host_unmet: "bus.present: /dev/i2c-9 missing" });
  const fx = await startProgrammable({ ...unmet, devices: {} }, {
    restart: { backoffMs: [0, 0, 0] },
  });
  try {
    assert.equal(fx.host.available, true);
    assert.deepEqual(fx.host.devices, []);
    assert.deepEqual(fx.host.hostCheck(), {
      status: "unmet",
      summary: "bus.present: /dev/i2c-9 missing",
      unmet: [{ id: "bus.present", detail: "/dev/i2c-9 missing", remedy: "" }],
    });
    assert.ok(
      fx.lines.some((l) =>
        /^WARN .*\[p0\] up, not ready: no devices; host requirements unmet: "bus\.present"$/.test(l)
      ),
      fx.lines.join("\n"),
    );
    // The host is fixed; the provider's next process finds its device and says ok.
    await Deno.writeTextFile(
      fx.inventoryFile,
      JSON.stringify({ ...ready({ host_check: "ok" }), devices: { ph_0: { signals: SIGNALS } } }),
    );
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["ph_0"]);
    assert.deepEqual(fx.host.hostCheck(), { status: "ok", summary: "", unmet: [] });
  } finally {
    await fx.close();
  }
});

Deno.test("A provider's host_unmet summary is quoted in its WARN line and kept unquoted in its host check", async () => {
  const summary = 'bus.present: "/dev/i2c-9" missing\nERROR forged line';
  const fx = await startProgrammable({
    ...ready({ host_check: "unmet", host_unmet: summary }),
    devices: {},
  });
  try {
    assert.equal(fx.host.hostCheck()?.summary, summary, "the API's text is the provider's");
    const warns = fx.lines.filter((l) => /^WARN .*\] host requirements unmet: /.test(l));
    assert.equal(warns.length, 1, fx.lines.join("\n"));
    assert.ok(
      warns[0]!.endsWith(`host requirements unmet: ${JSON.stringify(summary)}`),
      warns[0],
    );
  } finally {
    await fx.close();
  }
});

Deno.test("A ListDevices that goes unanswered fails the start naming the step", async () => {
  await assert.rejects(
    startProgrammable({ devices: { a: { signals: SIGNALS } }, listDelayMs: 5000 }, {
      timeoutMs: 300,
    }),
    (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "UNAVAILABLE");
      assert.equal(
        e.message,
        "provider start failed: p0: ListDevices failed: list_devices got no answer within 300 ms",
      );
      return true;
    },
  );
});

Deno.test("A provider that dies during discovery fails the start instead of skipping its devices", async () => {
  await assert.rejects(
    startProgrammable({
      list: ["a", "b", "c"],
      devices: { a: { signals: SIGNALS }, b: { signals: SIGNALS }, c: { signals: SIGNALS } },
      exitOnDescribe: "b",
    }),
    (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.match(
        e.message,
        /^provider start failed: p0: DescribeDevice "b" failed: .*\(process exit code 4\)$/,
      );
      return true;
    },
  );
});

Deno.test("Discovery warnings: a reason of exactly 300 characters and an id of exactly 80 are not cut", async () => {
  const exact = "E".repeat(164); // quoted cut (83) + the fixed words + itself: 300 characters
  const id80 = "I".repeat(80);
  const fx = await startProgrammable({
    list: ["a", exact, id80],
    devices: { a: { signals: SIGNALS } },
  });
  try {
    const [w1, w2] = fx.host.session!.discoveryWarnings;
    const why = `DescribeDevice "${"E".repeat(80)}…" failed: provider answered NOT_FOUND: ${exact}`;
    assert.equal(why.length, 300);
    assert.equal(w1, `${why}; device skipped`);
    assert.equal(
      w2,
      `DescribeDevice "${id80}" failed: provider answered NOT_FOUND: ${id80}; device skipped`,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery keys a device by the asked id when DescribeDevice leaves out the Device message", async () => {
  const fx = await startProgrammable({ devices: { bare: { signals: SIGNALS, noDevice: true } } });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["bare"]);
    assert.deepEqual(fx.host.session!.discoveryWarnings, []);
  } finally {
    await fx.close();
  }
});

Deno.test("A discovery failure quotes the provider's last stderr lines, and an empty list warns of nothing", async () => {
  const lines: string[] = [];
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify({ devices: {}, stderr: ["ERROR no bus found"] }));
  const registry = new ProviderRegistry([programmableProvider("p0", file)], {
    spawn: spawnProcess,
    clock: systemClock,
    log: capturingLogger({ now: () => 0, lines }).log,
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  try {
    await assert.rejects(registry.startAll(30_000, 1000), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(
        e.message,
        'provider start failed: p0: provider described no devices; provider\'s last stderr line: "ERROR no bus found"',
      );
      return true;
    });
    assert.deepEqual(lines.filter((l) => l.includes("discovery:")), []);
  } finally {
    await registry.stopAll(1000);
    await Deno.remove(file);
  }
});

Deno.test("A signal declared twice: the first declaration is kept whole (type, poll hint, stale bound), with a warning", async () => {
  const fx = await startProgrammable({
    devices: {
      a: {
        signals: [
          { id: "x", type: T.DOUBLE }, // polled, no stale_after_ms of its own
          { id: "y", type: T.DOUBLE },
          { id: "x", type: T.DOUBLE, hint: 0, staleMs: 900_000 }, // not polled, a long bound
        ],
      },
    },
  });
  try {
    const caps = fx.registry.capabilities("p0", "a")!;
    assert.deepEqual(caps.signals.map((s) => s.signalId), ["x", "y"], "one declaration of x");
    assert.equal(caps.signals[0]!.staleAfterMs, 0, "the first declaration's");
    assert.deepEqual(fx.cache.device("p0", "a")!.pollable, ["x", "y"]);
    // x's bound is that of a signal declaring none (its device's liveness bound), as y's: not
    // the 900 s of a declaration that also says x is not polled.
    assert.equal(
      fx.cache.staleAfterMs("p0", "a", "x"),
      fx.cache.livenessBounds("p0", "a")!.staleAfterMs,
      "x's stale bound",
    );
    assert.deepEqual(fx.host.session!.discoveryWarnings, [
      'DescribeDevice "a" declares signal "x" more than once; the first declaration is kept',
    ]);
  } finally {
    await fx.close();
  }
});

Deno.test("An argument a function declares twice: the first declaration is kept, with a warning", async () => {
  const fx = await startProgrammable({
    devices: {
      a: {
        signals: [{ id: "x", type: T.DOUBLE }],
        functions: [{
          function_id: 9,
          name: "set_x",
          policy: { category: 2 },
          args: [
            { name: "x", type: T.DOUBLE, required: true },
            { name: "y", type: T.DOUBLE },
            { name: "x", type: T.INT64 },
          ],
        }],
      },
    },
  });
  try {
    const fn = fx.registry.capabilities("p0", "a")!.functions.find((f) => f.name === "set_x")!;
    assert.deepEqual(fn.args.map((a) => [a.name, a.type]), [["x", "double"], ["y", "double"]]);
    assert.deepEqual(fx.host.session!.discoveryWarnings, [
      'DescribeDevice "a" function "set_x" declares argument "x" more than once; ' +
      "the first declaration is kept",
    ]);
  } finally {
    await fx.close();
  }
});

Deno.test("A function_id two functions declare, one of them actuating: both are taken as actuating, with a warning", async () => {
  // A call selects a function by its id (the first declaring it) or by its name: a READ and an
  // ACTUATE function sharing an id made a call by that id pass the e-stop latch and the mode gate
  // as a read, though the provider may run the actuating one.
  const fx = await startProgrammable({
    devices: {
      a: {
        signals: [{ id: "x", type: T.DOUBLE }],
        functions: [
          { function_id: 7, name: "read_temp", policy: { category: 1 }, args: [] },
          { function_id: 7, name: "heater_on", policy: { category: 3 }, args: [] },
          { function_id: 8, name: "read_other", policy: { category: 1 }, args: [] },
        ],
      },
    },
  });
  try {
    const fns = fx.registry.capabilities("p0", "a")!.functions;
    assert.deepEqual(
      fns.filter((f) => f.functionId >= 7).map((f) => [f.functionId, f.name, f.actuating]),
      [[7, "read_temp", true], [7, "heater_on", true], [8, "read_other", false]],
    );
    assert.deepEqual(fx.host.session!.discoveryWarnings, [
      'DescribeDevice "a" declares function_id 7 more than once ("read_temp", "heater_on"); ' +
      "a call by that id is taken as actuating",
    ]);
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery skips a device whose id or one of whose signal ids has a control character, with one WARN quoting it escaped; the others are kept", async () => {
  const ids = ["nul\u0000", "cr\r", "esc\u001b[31m", "del\u007f", "us\u001f"];
  const fx = await startProgrammable({
    list: ["a", ...ids, "sig", "b"],
    devices: {
      a: { signals: SIGNALS },
      b: { signals: SIGNALS },
      sig: { signals: [{ id: "x", type: T.DOUBLE }, { id: "y\u0000", type: T.DOUBLE }] },
      ...Object.fromEntries(ids.map((id) => [id, { signals: SIGNALS }])),
    },
  }, { inProcess: true });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["a", "b"]);
    // Each quoted JSON-style, DEL too (JSON.stringify leaves it raw; quoteProviderText does not).
    const expected = [
      ...['"nul\\u0000"', '"cr\\r"', '"esc\\u001b[31m"', '"del\\u007f"', '"us\\u001f"'].map((id) =>
        `device id ${id} has a control character; device skipped`
      ),
      'DescribeDevice "sig" declares signal "y\\u0000", which has a control character; device skipped',
    ];
    assert.deepEqual(fx.host.session!.discoveryWarnings, expected);
    const warns = fx.lines.filter((l) => l.includes("discovery:"));
    // The log line says the same: nothing is left for it to escape (escapeControl).
    assert.deepEqual(warns.map((l) => l.replace(/^WARN .*\[p0\] discovery: /, "")), expected);
    assert.ok(warns.every((l) => !hasControlCharacter(l)), "no raw control character logged");
    // The devices kept are polled as usual.
    await fx.program("b", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "b");
    assert.equal(fx.cache.device("p0", "b")!.available, true);
    assert.deepEqual(fx.cache.device("p0", "b")!.signals.get("x")?.value, {
      type: "double",
      double: 1,
    });
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery skips a function whose name or one of whose argument names has a control character, with one WARN each quoting it escaped; the device and its other functions are kept", async () => {
  const fx = await startProgrammable({
    list: ["a", "b"],
    devices: {
      a: {
        signals: SIGNALS,
        functions: [
          { function_id: 10, name: "set_x", policy: { category: 3 }, args: [] },
          // The name holds CR, an argument ESC, and q is declared twice: one warning (the name's).
          {
            function_id: 11,
            name: "set\r",
            policy: { category: 3 },
            args: [
              { name: "v\u001b", type: T.DOUBLE },
              { name: "q", type: T.DOUBLE },
              { name: "q", type: T.DOUBLE },
            ],
          },
          {
            function_id: 12,
            name: "set_y",
            policy: { category: 3 },
            args: [{ name: "y", type: T.DOUBLE }, { name: "z\u007f", type: T.DOUBLE }],
          },
          { function_id: 13, name: "nel\u0085", policy: { category: 1 }, args: [] },
          // A READ sharing its id with a skipped ACTUATE function stays gated as actuating.
          { function_id: 14, name: "pulse\u0000", policy: { category: 3 }, args: [] },
          { function_id: 14, name: "read_pulse", policy: { category: 1 }, args: [] },
          {
            function_id: 15,
            name: "set_w",
            policy: { category: 3 },
            args: [{ name: "w", type: T.DOUBLE }],
          },
        ],
      },
      b: { signals: SIGNALS },
    },
  }, { inProcess: true });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["a", "b"]);
    const fns = fx.registry.capabilities("p0", "a")!.functions.filter((f) => f.functionId >= 10);
    assert.deepEqual(fns.map((f) => [f.functionId, f.name, f.actuating]), [
      [10, "set_x", true],
      [14, "read_pulse", true],
      [15, "set_w", true],
    ]);
    const expected = [
      'DescribeDevice "a" declares function "set\\r", which has a control character; function skipped',
      'DescribeDevice "a" function "set_y" declares argument "z\\u007f", which has a control ' +
      "character; function skipped",
      'DescribeDevice "a" declares function "nel\\u0085", which has a control character; ' +
      "function skipped",
      'DescribeDevice "a" declares function "pulse\\u0000", which has a control character; ' +
      "function skipped",
      'DescribeDevice "a" declares function_id 14 more than once ("pulse\\u0000", "read_pulse"); ' +
      "a call by that id is taken as actuating",
    ];
    assert.deepEqual(fx.host.session!.discoveryWarnings, expected);
    const warns = fx.lines.filter((l) => l.includes("discovery:"));
    // The quote escapes DEL and NEL JSON-style (\u007f, \u0085): the log line says the same.
    assert.deepEqual(warns.map((l) => l.replace(/^WARN .*\[p0\] discovery: /, "")), expected);
    assert.ok(warns.every((l) => !hasControlCharacter(l)), "no raw control character logged");
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery skips a device whose id or one of whose signal ids has a C1 control character (NEL U+0085), its WARN line escaped", async () => {
  const fx = await startProgrammable({
    list: ["a", "nel\u0085", "sig"],
    devices: {
      a: { signals: SIGNALS },
      "nel\u0085": { signals: SIGNALS },
      sig: { signals: [{ id: "x", type: T.DOUBLE }, { id: "y\u009b", type: T.DOUBLE }] },
    },
  }, { inProcess: true });
  try {
    assert.deepEqual(fx.registry.devices().map((d) => d.deviceId), ["a"]);
    assert.deepEqual(fx.host.session!.discoveryWarnings, [
      'device id "nel\\u0085" has a control character; device skipped',
      'DescribeDevice "sig" declares signal "y\\u009b", which has a control character; device skipped',
    ]);
    const warns = fx.lines.filter((l) => l.includes("discovery:"));
    assert.deepEqual(warns.map((l) => l.replace(/^WARN .*\[p0\] discovery: /, "")), [
      'device id "nel\\u0085" has a control character; device skipped',
      'DescribeDevice "sig" declares signal "y\\u009b", which has a control character; device skipped',
    ]);
  } finally {
    await fx.close();
  }
});
