/**
 * The declared-call preflight (contract config.md sec. 6: hook and safety calls that do not
 * resolve against the discovered devices, logged at ERROR) across a provider's restart outside a
 * reload: a provider that comes back with a function renamed, or without the device a ladder or
 * hook call names, makes that call fail when it runs; that is said when the inventory changes, not
 * at the next e-stop -- once per change, not per poll, and not for a restart that rediscovers the
 * same inventory. The provider is the programmable one, a real child process.
 */
import assert from "node:assert/strict";
import { rig, type RigOptions } from "../helpers/rig.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import type { CallConfig } from "../../src/config/mod.ts";

const ACTUATE = 3;

/** p0 with device act0, whose actuating function 10 is called `name`. */
function inventory(name: string | null): Inventory {
  return {
    devices: {
      ...(name === null ? {} : {
        act0: {
          signals: [],
          functions: [{ function_id: 10, name, policy: { category: ACTUATE }, args: [] }],
        },
      }),
      // Polled: the test waits for its reads.
      probe: { signals: [{ id: "temp", type: T.DOUBLE }] },
    },
  };
}

const PULSE: CallConfig = {
  deviceHandle: "p0/act0",
  functionId: 0,
  functionName: "pulse",
  args: {},
  path: "safety.safe_state.hooks[0]",
};

/**
 * The rig options of these tests: p0 a real child reading its inventory from `file`, restarted
 * at once by its supervisor, polled every 50 ms; PULSE the safe-state hook.
 */
function p0WithPulseHook(file: string): RigOptions {
  return {
    programs: false,
    providers: [
      programmableProvider("p0", file, {
        restart: { maxAttempts: 5, backoffMs: [0, 0, 0, 0, 0] },
      }),
    ],
    pollingIntervalMs: 50,
    safety: { hooks: [PULSE] },
  };
}

Deno.test("Kernel says a ladder call a changed inventory leaves unresolved, once", async () => {
  const dir = tempDir("rediscovery-declared-");
  const file = `${dir}/p0.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory("pulse")));
  await using r = await rig(p0WithPulseHook(file));
  const rt = r.kernel;
  const p0 = rt.registry.host("p0")!;
  const unresolved = () => r.lines.filter((l) => l.includes(UNRESOLVED));
  assert.deepEqual(unresolved(), [], "start-up: the call resolves");
  /** The probe's reads so far (function 2 of the programmable provider). */
  const reads = async () => {
    const res = await p0.request("call", { device_id: "probe", function_id: 2, args: {} });
    return Number(res.results?.["reads"]?.string_value);
  };
  /** Kills p0 with `next` in its file and waits for the next process to be up and polled. */
  const restart = async (what: string, next: Inventory) => {
    await Deno.writeTextFile(file, JSON.stringify(next));
    const pid = p0.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor(`${what}: p0 up again`, () => p0.available && p0.session!.pid !== pid, 30_000);
    // Polls after the rediscovery: a check per poll would say the call again meanwhile.
    await waitFor(`${what}: p0 polled again`, async () => await reads() >= 5, 30_000);
  };

  await restart("function renamed", inventory("pulse_v2"));
  const renamed = unresolved();
  assert.equal(renamed.length, 1, `said ${renamed.length} times:\n${r.lines.join("\n")}`);
  assert.match(
    renamed[0]!,
    /^ERROR .*does not resolve: safety\.safe_state\.hooks\[0\]: function "pulse" not found/,
  );

  await restart("the same inventory", inventory("pulse_v2"));
  assert.equal(unresolved().length, 1, "an unchanged restart says nothing new");

  await restart("device gone", inventory(null));
  const gone = unresolved();
  assert.equal(gone.length, 2, `said ${gone.length} times:\n${r.lines.join("\n")}`);
  assert.match(gone[1]!, /declared call does not resolve: safety\.safe_state\.hooks\[0\]: .*act0/);

  // Back as configured: nothing more to say.
  await restart("back", inventory("pulse"));
  assert.equal(unresolved().length, 2);
});

/**
 * p0 comes back without the function the ladder calls while a reload adding p1 runs; returns the
 * reload's report and the rig's lines. `lineThrows`: the sink fails on that ERROR line (a custom
 * logger), from the reload on.
 */
async function rediscoveryDuringReload(lineThrows: boolean) {
  const dir = tempDir("rediscovery-declared-reload-");
  const file = `${dir}/p0.json`;
  const slowFile = `${dir}/p1.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory("pulse")));
  // p1 answers its Hello late: the reload that adds it is still running while p0 comes back.
  await Deno.writeTextFile(
    slowFile,
    JSON.stringify({ hello: { delayMs: 4000 }, devices: inventory(null).devices }),
  );
  let broken = false;
  await using r = await rig({
    ...p0WithPulseHook(file),
    onLine: (line) => {
      if (broken && line.includes(UNRESOLVED)) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  const p0 = rt.registry.host("p0")!;
  broken = lineThrows;
  let settled = false;
  const reload = rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, programmableProvider("p1", slowFile)],
  }).finally(() => settled = true);
  await waitFor("p1 starting", () => rt.registry.host("p1") !== undefined, 10_000);
  // p0 comes back without the function the ladder calls while the reload runs.
  await Deno.writeTextFile(file, JSON.stringify(inventory("pulse_v2")));
  const pid = p0.session!.pid;
  Deno.kill(pid, "SIGKILL");
  await waitFor("p0 up again", () => p0.available && p0.session!.pid !== pid, 30_000);
  assert.equal(settled, false, "the rediscovery came during the reload");
  return { report: await reload, lines: r.lines };
}

const UNRESOLVED = "declared call does not resolve";

Deno.test("Kernel says a ladder call left unresolved by a rediscovery during a reload once, not again at the reload's end", async () => {
  const { report, lines } = await rediscoveryDuringReload(false);
  assert.deepEqual(report.providers.added, ["p1"], JSON.stringify(report));
  const said = lines.filter((l) => l.includes(UNRESOLVED));
  assert.equal(said.length, 1, `said ${said.length} times:\n${lines.join("\n")}`);
  assert.match(said[0]!, /safety\.safe_state\.hooks\[0\]: function "pulse" not found/);
});

Deno.test("Kernel.reload that applied resolves when the line its end says of an unresolved call throws", async () => {
  const { report } = await rediscoveryDuringReload(true);
  assert.deepEqual(report.providers.added, ["p1"], JSON.stringify(report));
});

Deno.test("Kernel's checks of a changed inventory run on when the line of one of them throws", async () => {
  const dir = tempDir("rediscovery-declared-throws-");
  const file = `${dir}/p0.json`;
  /** inventory(name) with the probe's temp declared in `unit`. */
  const withUnit = (name: string, unit: string): Inventory => ({
    devices: {
      ...inventory(name).devices,
      probe: { signals: [{ id: "temp", type: T.DOUBLE, unit }] },
    },
  });
  await Deno.writeTextFile(file, JSON.stringify(withUnit("pulse", "degF")));
  await using r = await rig({
    ...p0WithPulseHook(file),
    ...alarmsConfig("alarms:\n  - { id: hot, signal: p0/probe/temp, hi: 50 }\n", ["p0"]),
    // The sink fails on the unresolved call's line (a custom logger); the units check comes after.
    onLine: (line) => {
      if (line.includes(UNRESOLVED)) throw new Error("log sink failed");
    },
  });
  const p0 = r.kernel.registry.host("p0")!;
  const unitLines = () => r.lines.filter((l) => l.includes("declared unit changed"));
  const restart = async (what: string, next: Inventory) => {
    await Deno.writeTextFile(file, JSON.stringify(next));
    const pid = p0.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor(`${what}: p0 up again`, () => p0.available && p0.session!.pid !== pid, 30_000);
  };
  // p0 comes back with the ladder's function renamed and temp declared in degC.
  await restart("renamed, degC", withUnit("pulse_v2", "degC"));
  await waitFor("the unit change said", () => unitLines().length > 0);
  assert.match(unitLines()[0]!, /alarm hot .* from "degF" to "degC" \(inventory of p0 changed\)/);
  // The unit was noted as seen: back in degF is a change again (its line throws again first).
  await restart("renamed, degF", withUnit("pulse_v2", "degF"));
  await waitFor("the second unit change said", () => unitLines().length > 1);
  assert.match(unitLines()[1]!, /from "degC" to "degF"/);
  assert.equal(unitLines().length, 2, r.lines.join("\n"));
});
