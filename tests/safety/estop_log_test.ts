/**
 * What the e-stop tells the operator in the log (docs/safety.md, "The ladder" and "Verified safe
 * state"): the plan with its gaps at start-up and again whenever a provider's inventory changes,
 * expectations that do not resolve, actuating devices nothing verifies, and an e-stop whose
 * read-back failed as an error. These lines are the documented output, so here the log is what is
 * asserted: which lines, at which level — their key content, not every word.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, expectation, inertSim, manualCall, plantProvider } from "./_fixture.ts";
import { MAX_NAMED_IN_WARNING } from "../../src/safety/mod.ts";
import { type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";

interface Line {
  level: "info" | "warn" | "error";
  text: string;
}

const LEVEL: Record<string, Line["level"]> = { "6": "info", "4": "warn", "3": "error" };

/** A runtime (providers in-process) whose e-stop log lines (scope `estop`) are kept, at info and above. */
async function start(config: Config): Promise<{ rt: Kernel; lines: Line[]; r: Rig }> {
  const lines: Line[] = [];
  const r = await rig({
    config,
    logLevel: "info",
    journald: true,
    onLine: (line) => {
      const m = /^<(\d)>\[estop\] (.*)$/.exec(line);
      if (m) lines.push({ level: (LEVEL[m[1]!])!, text: m[2]! });
    },
  });
  return { rt: r.kernel, lines, r };
}

const at = (lines: Line[], level: Line["level"]) =>
  lines.filter((l) => l.level === level).map((l) => l.text);

Deno.test("Estop logs its plan at start-up: every call, the untouched functions, unresolved expectations", async () => {
  const { rt, lines } = await start(testConfig({
    providers: [plantProvider("plant")],
    safety: {
      hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })],
      expect: [expectation("plant/plant0/nope", { equals: 0 })],
    },
  }));
  try {
    assert.deepEqual(at(lines, "info"), [
      "e-stop plan (start-up): rung 'hooks', 1 call(s), 1 actuating function(s) untouched",
      'e-stop plan call: "plant/plant0" "set_fan"("duty"=0)',
    ]);
    assert.deepEqual(at(lines, "warn"), [
      "The 'hooks' rung leaves 1 actuating function(s) untouched: " +
      '"plant/plant0" "set_heater". The e-stop did not change them; cover them with ' +
      "safety.safe_state.hooks and check the outputs that matter with " +
      "safety.safe_state.expect, or use the hardware emergency stop.",
      "safe-state expectation does not resolve: safety.safe_state.expect[0]: " +
      "signal not found: plant/plant0/nope",
    ]);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop logs a plan that covers everything and verifies every device without warnings", async () => {
  const { rt, lines } = await start(testConfig({
    providers: [plantProvider("plant")],
    safety: {
      setpoints: [
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
        call("plant/plant0", "set_heater", { enabled: false }),
      ],
      expect: [expectation("plant/plant0/heater_on", { equals: false })],
    },
  }));
  try {
    assert.equal(at(lines, "info").length, 3);
    assert.deepEqual(at(lines, "warn"), []);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop logs a none rung and the actuating devices nothing verifies", async () => {
  const { rt, lines } = await start(testConfig({ providers: [plantProvider("plant")] }));
  try {
    const warn = at(lines, "warn");
    assert.equal(warn.length, 2, warn.join("\n"));
    assert.match(warn[0]!, /ladder resolves to none/);
    assert.match(
      warn[1]!,
      /^no safe-state expectation covers 1 actuating device\(s\): "plant\/plant0" /,
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop logs its plan again when a provider's inventory changes, not after a restart that changed nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-log-" });
  // The first process of `plant` declares only its READ function, every later one two ACTUATE.
  const { rt, lines, r } = await start(testConfig({
    providers: [
      plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 }),
      inertSim("sim0", { restart: { backoffMs: [50] } }),
    ],
    safety: { zeroIsSafe: true },
  }));
  const headers = () => at(lines, "info").filter((t) => t.startsWith("e-stop plan ("));
  const rediscovered: string[] = [];
  for (const h of rt.registry.hosts) {
    h.onInventory((_d, changed) => rediscovered.push(`${h.id} ${changed ? "changed" : "same"}`));
  }
  const restart = async (id: string) => {
    const host = rt.registry.host(id)!;
    const pid = r.kill(id);
    await waitFor(`${id} restarted`, () => host.available && host.session!.pid !== pid);
  };
  try {
    assert.deepEqual(headers(), [
      "e-stop plan (start-up): rung 'zero', 10 call(s), 12 actuating function(s) untouched",
    ]);
    // Decided when the rediscovery is committed, before the provider is AVAILABLE again.
    await restart("sim0");
    assert.equal(headers().length, 1, "the same inventory: no new plan");
    await restart("plant");
    assert.deepEqual(headers().slice(1), [
      "e-stop plan (inventory of plant changed): rung 'zero', 12 call(s), 12 actuating function(s) untouched",
    ]);
    assert.deepEqual(rediscovered, ["sim0 same", "plant changed"]);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Estop's plan logged while a reload restarts a provider does not say an expectation on a device it listed does not resolve", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-log-reload-restart-" });
  // plant's changed entry: a process whose Hello is never answered (registered, not up).
  const hangFile = `${dir}/hang.json`;
  await Deno.writeTextFile(
    hangFile,
    JSON.stringify({
      hello: { hang: true },
      devices: { plant0: { signals: [{ id: "fan_duty", type: T.DOUBLE }] } },
    }),
  );
  const { rt, lines } = await start(testConfig({
    providers: [plantProvider("plant"), plantProvider("other")],
    safety: {
      zeroIsSafe: true,
      expect: [
        expectation("plant/plant0/fan_duty", { equals: 0 }, 0),
        expectation("other/plant0/fan_duty", { equals: 0 }, 1),
      ],
    },
  }));
  const reload = rt.reload({
    ...rt.config,
    providers: [programmableProvider("plant", hangFile), rt.config.providers[1]!],
  });
  try {
    assert.deepEqual(at(lines, "warn"), [], "start-up: every expectation resolves");
    await waitFor(
      "the plan logged while plant's new process is not up",
      () => at(lines, "info").some((t) => t.startsWith("e-stop plan (provider plant ")),
    );
    // Before: "(provider plant removed)", the words of a provider dropped from the file.
    assert.deepEqual(at(lines, "info").filter((t) => t.startsWith("e-stop plan (provider")), [
      "e-stop plan (provider plant taken out by a configuration reload, still configured): " +
      "rung 'zero', 2 call(s), 2 actuating function(s) untouched",
    ]);
    assert.equal(rt.registry.host("plant")?.available ?? false, false, "plant is not up");
    // Before: "safe-state expectation does not resolve: safety.safe_state.expect[0]: device not
    // found: plant/plant0" -- a device plant listed, lost while the reload restarts it, is no
    // expectation that does not match the configuration.
    assert.deepEqual(
      at(lines, "warn").filter((t) => t.startsWith("safe-state expectation does not resolve")),
      [],
    );
  } finally {
    await rt.stop();
    await reload.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Estop logs a read-back that failed as errors, one per check, and a verified one as info", async () => {
  const { rt, lines } = await start(testConfig({
    providers: [plantProvider("plant")],
    safety: {
      hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })],
      expect: [
        expectation("plant/plant0/fan_duty", { equals: 0 }, 0),
        expectation("plant/plant0/heater_on", { equals: false }, 1),
      ],
      verifyTimeoutMs: 100,
    },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(true) });
    const events: RuntimeEvent[] = [];
    const unsubscribe = rt.bus.subscribe((e) => events.push(e.event));
    const failed = await rt.estop.trigger("heater left on");
    unsubscribe();
    assert.equal(failed.verification.outcome, "mismatch");
    const [event] = events.filter((e) => e.kind === "estop_verification");
    assert.deepEqual(event, {
      kind: "estop_verification",
      outcome: "mismatch",
      elapsed_ms: failed.verification.elapsed_ms,
      checks_total: 2,
      checks_verified: 1,
      failed_signals: ["plant/plant0/heater_on"],
      timestamp_ms: event!.timestamp_ms,
    });
    const errors = at(lines, "error");
    assert.equal(errors.length, 2, errors.join("\n"));
    assert.match(errors[0]!, /^e-stop verification: mismatch after \d+ ms \(1\/2 verified\)$/);
    assert.equal(errors[1], "e-stop verification mismatch: plant/plant0/heater_on: reads true");

    rt.estop.clear();
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(false) });
    const verified = await rt.estop.trigger("all off");
    assert.equal(verified.verification.outcome, "verified");
    assert.equal(at(lines, "error").length, 2, "nothing more at error");
    assert.match(at(lines, "info").at(-1) ?? "", /^e-stop verification: verified after \d+ ms$/);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop says a stop with nothing configured to read back as one WARN, not as a failed read-back's ERROR", async () => {
  const { rt, lines } = await start(testConfig({ providers: [plantProvider("plant")] }));
  try {
    const before = at(lines, "warn").length;
    const r = await rt.estop.trigger("nothing to read back");
    assert.equal(r.verification.outcome, "unverifiable");
    assert.deepEqual(at(lines, "error"), [], "no read-back failed");
    assert.deepEqual(at(lines, "warn").slice(before).filter((l) => l.includes("verification")), [
      "e-stop verification: unverifiable: safety.safe_state.expect lists no signal to read " +
      "back, so the outputs' safe state is not verified",
    ]);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop's start-up warnings name at most MAX_NAMED_IN_WARNING functions and devices, and count the rest", async () => {
  const n = MAX_NAMED_IN_WARNING + 3;
  const providers = Array.from({ length: n }, (_, i) => plantProvider(`p${i}`));
  const { rt, lines } = await start(testConfig({
    providers,
    safety: { hooks: [call("p0/plant0", "set_fan", { duty: { double: 0 } })] },
  }));
  try {
    const [uncovered, unverified] = at(lines, "warn");
    // Each plant device has two actuating functions; the hook covers one of p0's.
    assert.match(
      uncovered!,
      new RegExp(
        `^The 'hooks' rung leaves ${2 * n - 1} actuating function\\(s\\) untouched: ` +
          `"p0/plant0" "set_heater", "p1/plant0" "set_heater", .* and ${
            2 * n - 1 - MAX_NAMED_IN_WARNING
          } ` +
          "more\\. The e-stop did not change them",
      ),
    );
    assert.equal(uncovered!.split(' "set_').length - 1, MAX_NAMED_IN_WARNING);
    assert.match(
      unverified!,
      new RegExp(
        `^no safe-state expectation covers ${n} actuating device\\(s\\): "p0/plant0", .*, ` +
          `"p${MAX_NAMED_IN_WARNING - 1}/plant0" and 3 more \\(an e-stop cannot verify them`,
      ),
    );
  } finally {
    await rt.stop();
  }
});

/** An inventory of actuating devices `ids`, each with `set_on(on: bool)` (rung 3 zeroes it). */
function actuators(...ids: string[]): Inventory {
  return {
    devices: Object.fromEntries(ids.map((id) => [id, {
      signals: [],
      functions: [{
        function_id: 10,
        name: "set_on",
        policy: { category: 3 },
        args: [{ name: "on", type: T.BOOL, required: true }],
      }],
    }])),
  };
}

/** The start-up warning of the devices an e-stop cannot verify, as logged last. */
const unverifiedLine = (lines: Line[]) =>
  at(lines, "warn").findLast((t) => t.startsWith("no safe-state expectation covers"));

Deno.test("Estop's start-up warning of unverified devices counts and names those status names, a device the safety config names that no provider lists included", async () => {
  const { rt, lines } = await start(testConfig({
    providers: [plantProvider("plant")],
    safety: {
      hooks: [call("plant/ghost", "set_fan", { duty: { double: 0 } })],
      expect: [],
    },
  }));
  try {
    assert.deepEqual(rt.estop.status().unverified_devices, ["plant/plant0", "plant/ghost"]);
    assert.equal(
      unverifiedLine(lines),
      'no safe-state expectation covers 2 actuating device(s): "plant/plant0", "plant/ghost" ' +
        "(not listed by its provider) (an e-stop cannot verify them; add " +
        "safety.safe_state.expect entries)",
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop's warning of unverified devices, logged again when an inventory changes, names a device its provider no longer lists", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-log-unlisted-" });
  const file = `${dir}/pol.json`;
  await Deno.writeTextFile(file, JSON.stringify(actuators("act0", "act1")));
  const { rt, lines, r } = await start(testConfig({
    providers: [
      programmableProvider("pol", file, { restart: { maxAttempts: 5, backoffMs: [0, 0, 0] } }),
    ],
    safety: { zeroIsSafe: true },
  }));
  try {
    assert.equal(
      unverifiedLine(lines),
      'no safe-state expectation covers 2 actuating device(s): "pol/act0", "pol/act1" ' +
        "(an e-stop cannot verify them; add safety.safe_state.expect entries)",
    );
    // Restarted, it lists act1 only: act0 is still one the ladder is to secure, and unverified.
    await Deno.writeTextFile(file, JSON.stringify(actuators("act1")));
    const pol = rt.registry.host("pol")!;
    const pid = r.kill("pol");
    await waitFor(
      "pol up again with one device, and the plan logged again",
      () =>
        pol.available && pol.session!.pid !== pid &&
        at(lines, "info").some((t) => t.startsWith("e-stop plan (inventory of pol changed)")),
    );
    assert.deepEqual(rt.estop.status().unverified_devices, ["pol/act1", "pol/act0"]);
    assert.equal(
      unverifiedLine(lines),
      'no safe-state expectation covers 2 actuating device(s): "pol/act1", "pol/act0" (no ' +
        "longer listed by its provider) (an e-stop cannot verify them; add " +
        "safety.safe_state.expect entries)",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Estop's none-rung warning logged while the e-stop is latched says it is latched, not that one will latch", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-log-none-latched-" });
  // No safety section: rung 'none'. The first process of `plant` declares only its READ
  // function, every later one two ACTUATE: its restart changes the inventory, the plan is logged.
  const { rt, lines, r } = await start(testConfig({
    providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
  }));
  const headers = () => at(lines, "info").filter((t) => t.startsWith("e-stop plan ("));
  try {
    assert.deepEqual(
      at(lines, "warn").filter((t) => t.includes("resolves to none")),
      ["safe-state ladder resolves to none: an e-stop will latch without actuating"],
    );
    await rt.estop.trigger("latched before the inventory changes");
    assert.equal(rt.estop.latched, true);
    const host = rt.registry.host("plant")!;
    const pid = r.kill("plant");
    await waitFor("plant restarted", () => host.available && host.session!.pid !== pid);
    await waitFor("the plan logged again", () => headers().length === 2);
    assert.equal(rt.estop.latched, true, "still latched when the plan was logged");
    // Before: "an e-stop will latch without actuating", of an e-stop latched already.
    assert.deepEqual(
      at(lines, "warn").filter((t) => t.includes("resolves to none")).slice(1),
      [
        "safe-state ladder resolves to none: the e-stop is latched, and no call secures a " +
        "device that answers again while it stays latched",
      ],
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
