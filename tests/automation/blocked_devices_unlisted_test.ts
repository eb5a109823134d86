/**
 * GET /v0/automation/status `blocked_devices[].since_epoch_ms` of a device the tree names that its
 * provider's restart left out (provider up, the device not listed): it went down when its provider
 * did, and has been down since, so it stays dated so -- not undated once the provider is back
 * without it. A restart that lists it again and one that leaves it out again date it from that
 * later outage; a reload that restarts the provider (its entry changed) dates it from the take-out.
 * The real kernel with sim0 (the AUTO -> FAULT hook) and the programmable provider p0
 * (restarted by its supervisor), reading its inventory from a file at each start.
 */
import assert from "node:assert/strict";
import { afterPolls, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { type Inventory, programmableProvider, Q, T } from "../helpers/programmable_provider.ts";
import type { Clock } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/**
 * p0's restart backoff: its devices are down this long before it is back, so a date taken when it
 * is back (the restart's discovery) is told apart from one taken when it went down.
 */
const BACKOFF_MS = 300;

/**
 * How far a date may lie from the test's Date.now() reads around it although right: the runtime
 * counts a monotonic distance (rounded to the ms) back from a wall clock read.
 */
const DATE_SLACK_MS = 5;

/** p0's inventory: `other` always, `probe` (the device the tree reads) when `withProbe`. */
function inventory(withProbe: boolean): Inventory {
  const sample = (id: string) => [{ id, type: T.DOUBLE, double: 1, quality: 1 }];
  return {
    devices: {
      ...(withProbe
        ? { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: sample("temp") } }
        : {}),
      other: { signals: [{ id: "x", type: T.DOUBLE }], values: sample("x") },
    },
  };
}

/**
 * The real kernel (MANUAL) with sim0 and p0, whose tree reads p0/probe: p0's inventory from
 * `invFile` (probe listed at start), restarted BACKOFF_MS after it goes down; the clock `clock`
 * (default the system's). Disposing stops the kernel and removes the folder.
 */
async function probeRig(clock: Clock = systemClock) {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "reads_probe.xml",
      treeXml(`<ReadSignal device_handle="p0/probe" signal_id="temp" value="{t}" />`),
    );
    const invFile = `${dir.path}/p0.json`;
    await Deno.writeTextFile(invFile, JSON.stringify(inventory(true)));
    const p0 = programmableProvider("p0", invFile, {
      restart: { backoffMs: [BACKOFF_MS], maxAttempts: 10 },
    });
    const r = await rig({
      config: automationConfig(tree, { config: { providers: [simProvider("sim0"), p0] } }),
      clock,
      arm: true,
    });
    const rt = r.kernel;
    return {
      r,
      rt,
      invFile,
      /** p0/probe's entry in automation status' blocked_devices (undefined: not blocked). */
      probe: () =>
        rt.automation!.status().blocked_devices.find((b) => b.device_handle === "p0/probe"),
      async [Symbol.asyncDispose]() {
        try {
          await r[Symbol.asyncDispose]();
        } finally {
          await dir.dispose();
        }
      },
    };
  } catch (err) {
    await dir.dispose();
    throw err;
  }
}

Deno.test("automation status dates a device a provider's restart left out from when it went down with its provider, not as undated", async () => {
  await using fx = await probeRig();
  const { r, rt, invFile, probe } = fx;
  const listed = () => rt.inventory.capabilities("p0", "probe") !== undefined;
  // When the runtime said p0 down (its provider_health_change UNAVAILABLE): its restart is due
  // BACKOFF_MS after that, so a date taken at the restart lies past it. How long after the kill
  // p0 is said down depends on the machine's load (its exit noticed), so the bound counts from
  // there, not from the kill. (Its devices are dated by the same synchronous step's listeners.)
  let saidDownAt: number | null = null;
  rt.bus.subscribe(({ event: e }) => {
    if (
      e.kind === "provider_health_change" && e.provider_id === "p0" && e.state === "UNAVAILABLE"
    ) saidDownAt = Date.now();
  });
  /** p0 crashes and comes back with or without probe; returns when it was killed and said down. */
  const restart = async (withProbe: boolean) => {
    await Deno.writeTextFile(invFile, JSON.stringify(inventory(withProbe)));
    saidDownAt = null;
    const killedAt = Date.now();
    r.kill("p0");
    await waitFor(
      `p0 back ${withProbe ? "with" : "without"} probe`,
      () => saidDownAt !== null && rt.registry.host("p0")!.available && listed() === withProbe,
    );
    const downAt: number = saidDownAt!;
    assert.ok(Date.now() >= downAt + BACKOFF_MS - DATE_SLACK_MS, "back after its backoff");
    return { killedAt, downAt };
  };
  const assertDownSince = (at: { killedAt: number; downAt: number }, what: string) => {
    const b = probe();
    assert.equal(b?.condition, "down", what);
    assert.equal(b?.reason, "not in the inventory of provider p0", what);
    assert.ok(
      b?.since_epoch_ms != null && b.since_epoch_ms >= at.killedAt - DATE_SLACK_MS &&
        b.since_epoch_ms < at.downAt + BACKOFF_MS / 2,
      `${what}: since_epoch_ms ${b?.since_epoch_ms} is when p0 went down (killed at ` +
        `${at.killedAt}, said down at ${at.downAt}, back ${BACKOFF_MS} ms later at the earliest)`,
    );
    return b!.since_epoch_ms!;
  };

  assert.equal(probe(), undefined, "up at start");
  const firstKill = await restart(false);
  const since = assertDownSince(firstKill, "left out by the restart");
  // Its provider's polls go on (`other`): each rechecks its devices.
  await afterPolls(rt, "p0/other", 2, "2 polls of p0/other after the restart");
  assert.equal(probe()?.since_epoch_ms, since, "the date stays while it is not listed");

  // Listed again and answering: up. Left out again: down since that later outage.
  await restart(true);
  await waitFor("p0/probe up again", () => probe() === undefined);
  const secondKill = await restart(false);
  assertDownSince(secondKill, "left out by a later restart");

  // Listed again; then a reload restarts p0 (its entry changed) and the new process leaves it out.
  await restart(true);
  await waitFor("p0/probe up again", () => probe() === undefined);
  await Deno.writeTextFile(invFile, JSON.stringify(inventory(false)));
  const reloadAt = Date.now();
  const report = await rt.reload({
    ...rt.config,
    providers: rt.config.providers.map((p) =>
      p.id === "p0" ? { ...p, timeoutMs: p.timeoutMs + 1000 } : p
    ),
  });
  const reloadedAt = Date.now();
  assert.deepEqual(report.providers.restarted, ["p0"]);
  assert.equal(listed(), false, "the new process leaves probe out");
  const b = probe();
  assert.equal(b?.condition, "down");
  assert.ok(
    b?.since_epoch_ms != null && b.since_epoch_ms >= reloadAt - DATE_SLACK_MS &&
      b.since_epoch_ms <= reloadedAt + DATE_SLACK_MS,
    `left out by a reload's restart: since_epoch_ms ${b?.since_epoch_ms} is within the reload ` +
      `(${reloadAt} to ${reloadedAt})`,
  );
});

Deno.test("automation status dates a device failing as its provider comes back from its first failed read then: a wall clock stepped back since does not move the date", async () => {
  const step = { wallOffsetMs: 0 };
  const clock: Clock = { ...systemClock, nowMs: () => systemClock.nowMs() + step.wallOffsetMs };
  await using fx = await probeRig(clock);
  const { r, rt, invFile, probe } = fx;
  assert.equal(probe(), undefined, "up at start");
  // The new process lists probe but every read of it is FAULT: failing as p0 comes back, from
  // no known moment (nothing read yet), then from its first failed read.
  const probeDecl = inventory(true).devices.probe!;
  const faulty: Inventory = {
    devices: {
      ...inventory(true).devices,
      probe: { ...probeDecl, values: [{ ...probeDecl.values![0]!, quality: Q.FAULT }] },
    },
  };
  await Deno.writeTextFile(invFile, JSON.stringify(faulty));
  r.kill("p0");
  await waitFor("p0 down", () => !rt.registry.host("p0")!.available);
  // Its first read after the return comes after this (p0 is back BACKOFF_MS after it went down).
  const downSeen = clock.nowMs();
  await waitFor("p0 back", () => rt.registry.host("p0")!.available);
  await waitFor(
    "probe's first failed read dated",
    () => rt.outages.condition("p0", "probe").sinceMono !== null,
  );
  const observed = clock.nowMs();
  // Failing (down if this machine took past the bound to get here: dated when told so).
  assert.notEqual(rt.outages.condition("p0", "probe").kind, "up");
  // NTP steps the wall clock back an hour before anyone asks.
  step.wallOffsetMs = -3_600_000;
  const since = probe()?.since_epoch_ms ?? null;
  assert.ok(
    since !== null && since >= downSeen - DATE_SLACK_MS && since <= observed + DATE_SLACK_MS,
    `failing since its first read after p0 came back (${downSeen} to ${observed}), dated ${since}`,
  );
  step.wallOffsetMs = 3_600_000;
  assert.equal(probe()?.since_epoch_ms, since, "the date moved with the wall clock");
});
