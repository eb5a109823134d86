/**
 * A reload that changes polling.interval_ms and health.staleness together applies them one
 * section after the other; the state cache's no-WARNING-stage line (docs/http-api.md, the device
 * `health` table) is about the bounds the reload leaves in force, not the mix of the new interval
 * and the old stale bound in between. The runtime in process over the programmable provider as a
 * child process.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  dbl,
  HOST_UNMET_I2C1,
  type Inventory,
  programmableProvider,
  T,
} from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** Two devices at the default hint (polled every interval): their cycle is 2 x the interval. */
const INVENTORY: Inventory = {
  devices: {
    a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
    b: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
  },
};

const noStageLines = (lines: readonly string[]) =>
  lines.filter((l) => l.includes("no WARNING stage"));

/** One device "slow" whose signal hints 0.1 Hz. */
const SLOW: Inventory = {
  devices: { slow: { signals: [{ id: "x", type: T.DOUBLE, hint: 0.1 }] } },
};

/** How long the supervisor may take to have p0 back after its process is killed. */
const RESTART_WAIT_MS = 30_000;

/**
 * The runtime over p0 alone (restarted at once when its process dies) listing SLOW from a
 * temporary file (`prefix`), polling every 500 ms, stale after 10000 ms: slow has no WARNING
 * stage (derived warn 15000 >= 10000). Disposing of it stops the runtime and removes the file.
 */
async function slowP0(prefix: string) {
  const file = await Deno.makeTempFile({ prefix, suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(SLOW));
  const { log, lines } = capturingLogger({ level: "warn" });
  const p0 = programmableProvider("p0", file, { restart: { backoffMs: [0, 0, 0] } });
  const config = testConfig({
    providers: [p0],
    pollingIntervalMs: 500,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 10_000 } },
  });
  const rt = await startRuntime(config, { host: { log } });
  return {
    file,
    rt,
    lines,
    /** The no-WARNING-stage lines said of p0/slow so far. */
    saidOfP0: () => noStageLines(lines).filter((l) => l.includes('"p0/slow"')),
    /** Kills p0's process; waits (`what`) for the next one, listing `devices` device(s). */
    restart: async (what: string, devices: number) => {
      const host = rt.registry.host("p0")!;
      const pid = host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor(
        what,
        () => host.session?.pid !== pid && host.session !== null && host.devices.length === devices,
        RESTART_WAIT_MS,
      ).catch((err) => {
        throw new Error(`${err}: ${host.lifecycle} ${host.devices.length}\n${lines.join("\n")}`);
      });
    },
    [Symbol.asyncDispose]: async () => {
      await rt.stop();
      await Deno.remove(file);
    },
  };
}

Deno.test("Kernel.reload of polling.interval_ms and health.staleness together says no WARNING stage only of the bounds it leaves in force", async () => {
  const file = await Deno.makeTempFile({ prefix: "nostage-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(INVENTORY));
  const { log, lines } = capturingLogger({ level: "warn" });
  // interval 500, stale 40000: cycle 1000, derived warn 3000 < 40000 -- a WARNING stage.
  const config = testConfig({
    providers: [programmableProvider("p0", file)],
    pollingIntervalMs: 500,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 40_000 } },
  });
  const rt = await startRuntime(config, { host: { log } });
  try {
    await waitFor("a polled", () => rt.cache.signal("p0", "a", "x") !== undefined);
    assert.deepEqual(noStageLines(lines), []);
    // To interval 7000, stale 80000: cycle 14000, derived warn 42000 < 80000 -- a WARNING stage
    // still (and the file check's least bound, 21000, is below 80000: nothing said of the file).
    // The new interval under the old stale bound (42000 >= 40000) is in force for no reload.
    const report = await rt.reload({
      ...rt.config,
      polling: { intervalMs: 7000 },
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: 80_000 } },
    });
    assert.deepEqual([...report.applied].sort(), ["health", "polling"]);
    assert.deepEqual(rt.cache.livenessBounds("p0", "a"), {
      warnAfterMs: 42_000,
      staleAfterMs: 80_000,
    });
    assert.deepEqual(noStageLines(lines), []);
    // A reload whose bounds do leave them none says it, of each device, with the figures in force.
    await rt.reload({
      ...rt.config,
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: 40_000 } },
    });
    const said = noStageLines(lines);
    assert.equal(said.length, 2, said.join("\n"));
    for (const [i, id] of ["a", "b"].entries()) {
      assert.match(said[i]!, /^WARN\b/);
      assert.ok(said[i]!.includes(`"p0/${id}" has no WARNING stage`), said[i]);
      assert.ok(said[i]!.includes("stale_after_ms is 40000"), said[i]);
      assert.ok(said[i]!.includes("= 42000 ms"), said[i]);
    }
  } finally {
    await rt.stop();
    await Deno.remove(file);
  }
});

Deno.test("Kernel.reload that removes a provider and a later one that adds it again says no WARNING stage of its devices again; its plain restart does not", async () => {
  // interval 500, stale 10000: the file check passes (least derived warn bound 2000); "slow"
  // hints 0.1 Hz: period min(10 s, 10000 / 2) = 5000 ms, derived warn 15000 >= 10000.
  const file = await Deno.makeTempFile({ prefix: "nostage-readd-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(SLOW));
  const { log, lines } = capturingLogger({ level: "warn" });
  const p0 = programmableProvider("p0", file, { restart: { backoffMs: [0, 0, 0] } });
  const p1 = programmableProvider("p1", file);
  const config = testConfig({
    providers: [p0, p1],
    pollingIntervalMs: 500,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 10_000 } },
  });
  const rt = await startRuntime(config, { host: { log } });
  const saidOfP0 = () => noStageLines(lines).filter((l) => l.includes('"p0/slow"'));
  try {
    assert.equal(saidOfP0().length, 1, lines.join("\n"));
    // A plain restart (its process killed, the supervisor starts the next) lists the same
    // inventory under the same entry: nothing new to say.
    const host = rt.registry.host("p0")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor(
      "p0 restarted",
      () => host.available && host.session!.pid !== pid,
      RESTART_WAIT_MS,
    );
    assert.equal(saidOfP0().length, 1, lines.join("\n"));
    // Removed by a reload, then configured again by a later one: a new provider, said again.
    const removed = await rt.reload({ ...rt.config, providers: [p1] });
    assert.deepEqual(removed.providers.removed, ["p0"], JSON.stringify(removed));
    assert.equal(saidOfP0().length, 1, lines.join("\n"));
    const added = await rt.reload({ ...rt.config, providers: [p0, p1] });
    assert.deepEqual(added.providers.added, ["p0"], JSON.stringify(added));
    assert.ok(rt.registry.host("p0")?.available, "p0 is up again");
    const said = saidOfP0();
    assert.equal(said.length, 2, lines.join("\n"));
    assert.match(said[1]!, /^WARN\b.*"p0\/slow" has no WARNING stage.*= 15000 ms/);
  } finally {
    await rt.stop();
    await Deno.remove(file);
  }
});

Deno.test("a device listed again after a plain restart that listed nothing is not said to have no WARNING stage again", async () => {
  await using t = await slowP0("nostage-empty-");
  const { file, rt, lines, saidOfP0 } = t;
  assert.equal(saidOfP0().length, 1, lines.join("\n"));
  // Restarted by its supervisor listing nothing (its host check unmet), then the device again:
  // the same entry, the same device and bounds -- nothing new to say.
  await Deno.writeTextFile(file, JSON.stringify(HOST_UNMET_I2C1));
  await t.restart("p0 restarted with no device", 0);
  await Deno.writeTextFile(file, JSON.stringify(SLOW));
  await t.restart("p0 restarted with its device", 1);
  await waitFor(
    "slow in the cache again",
    () => rt.cache.livenessBounds("p0", "slow") !== undefined,
  );
  // Before: said a second time (the device's record was dropped with the empty inventory).
  assert.equal(saidOfP0().length, 1, lines.join("\n"));
});

Deno.test("a device a restart left out is said to have no WARNING stage again when a reload changes its provider's entry", async () => {
  await using t = await slowP0("nostage-changed-");
  const { file, rt, lines, saidOfP0 } = t;
  assert.equal(saidOfP0().length, 1, lines.join("\n"));
  // Restarted listing nothing (its host check unmet): slow's notice is kept for the same entry.
  await Deno.writeTextFile(file, JSON.stringify(HOST_UNMET_I2C1));
  await t.restart("p0 restarted with no device", 0);
  // A reload changing p0's entry restarts it as a new provider: what it lists is said anew.
  await Deno.writeTextFile(file, JSON.stringify(SLOW));
  const changed = programmableProvider("p0", file, {
    restart: { backoffMs: [0, 0, 0] },
    sh: "exec PROVIDER", // another command: a restart
  });
  const report = await rt.reload({ ...rt.config, providers: [changed] });
  assert.deepEqual(report.providers.restarted, ["p0"], JSON.stringify(report));
  await waitFor(
    "slow listed by the new p0",
    () => rt.registry.host("p0")?.devices.length === 1,
    RESTART_WAIT_MS,
  );
  await waitFor("slow said again", () => saidOfP0().length === 2, 10_000).catch((err) => {
    throw new Error(`${err}\n${lines.join("\n")}`);
  });
});
