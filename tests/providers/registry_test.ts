/**
 * ProviderRegistry: start-up refusing a bus address two devices claim with every provider stopped
 * again (the claim check itself: tests/providers/claims_test.ts), discovery order, add/remove.
 */
import assert from "node:assert/strict";
import {
  type Clock,
  QUOTED_PROVIDER_ID_CHARS,
  RuntimeError,
  type TimerId,
} from "../../src/common/mod.ts";
import type { RestartPolicyConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { describeNotReady, failedStartText, ProviderRegistry } from "../../src/providers/mod.ts";
import { processAlive, testLogger, waitFor } from "../helpers/kernel.ts";
import { elapseOn, ManualClock, settleMovingTime, settleOn } from "../helpers/clock.ts";
import { HOST_UNMET_I2C1, programmableProvider, T } from "../helpers/programmable_provider.ts";

const bus = (path: string, addr: string) => ({ "hw.bus_path": path, "hw.i2c_address": addr });

Deno.test("ProviderRegistry.startAll refuses two devices on one bus address and stops every provider", async () => {
  const files: string[] = [];
  const providers = [];
  for (const id of ["p0", "p1"]) {
    const file = await Deno.makeTempFile({ suffix: ".json" });
    files.push(file);
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        devices: {
          [`${id}dev`]: { signals: [{ id: "x", type: T.DOUBLE }], tags: bus("/dev/i2c-1", "0x48") },
        },
      }),
    );
    providers.push(programmableProvider(id, file));
  }
  const registry = new ProviderRegistry(providers, {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const pids: number[] = [];
  for (const h of registry.hosts) h.onInventory(() => pids.push(h.session?.pid ?? 0));
  try {
    await assert.rejects(registry.startAll(30_000, 1000), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.equal(
        e.message,
        "Ownership validation failed; resource claim conflict: claim 'i2c:/dev/i2c-1:0x48' held by p0/p0dev and p1/p1dev (each anolis.claim key must belong to one device)",
      );
      return true;
    });
    assert.equal(registry.hosts.some((h) => h.available), false);
    assert.equal(pids.length, 2);
    assert.deepEqual(pids.filter(processAlive), [], "every provider process ended");
  } finally {
    await registry.stopAll(1000);
    for (const f of files) await Deno.remove(f);
  }
});

/** A registry over programmable providers p0, p1, ... with these inventories, on `clock`. */
/**
 * A registry of programmable providers p0, p1, ... (one per inventory). `o.sh`: provider id ->
 * the `sh` script it runs under (programmableProvider); `o.lines`: its WARN lines land there.
 */
async function registryOf(
  inventories: object[],
  clock: Clock = systemClock,
  o: { sh?: Readonly<Record<string, string>>; lines?: string[] } = {},
) {
  const files: string[] = [];
  for (const inv of inventories) {
    const file = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(inv));
    files.push(file);
  }
  // Every provider process started, to tell whether each has ended.
  const pids: number[] = [];
  const registry = new ProviderRegistry(
    files.map((f, i) =>
      programmableProvider(`p${i}`, f, {
        helloTimeoutMs: 60_000,
        ...(o.sh?.[`p${i}`] === undefined ? {} : { sh: o.sh[`p${i}`] }),
      })
    ),
    {
      spawn: (o) => {
        const proc = spawnProcess(o);
        pids.push(proc.pid);
        return proc;
      },
      clock,
      log: o.lines === undefined
        ? testLogger()
        : capturingLogger({ level: "warn", now: () => 0, lines: o.lines }).log,
      bus: new EventBus(),
      cwd: Deno.cwd(),
      shutdownTimeoutMs: 1000,
    },
  );
  return {
    registry,
    pids,
    files,
    async close() {
      await registry.stopAll(1000);
      for (const f of files) await Deno.remove(f);
    },
  };
}

const OK_INVENTORY = { devices: { d: { signals: [{ id: "x", type: T.DOUBLE }] } } };

/** How long a test waits for a provider's start to reach the state its deadline is to find. */
const START_WAIT_MS = 30_000;

/** Set from ProviderRegistry.startAll itself (its raceTimeout): its start-up deadline. */
const START_ALL_DEADLINE = /at raceTimeout [^\n]*\n\s*at ProviderRegistry\.startAll /;

/**
 * The host's clock, except that ProviderRegistry.startAll's start-up deadline fires only when the
 * test says (`fire`): the test first waits on real state (a provider up, one failed, one's stderr
 * read), so what the deadline finds does not race the providers' starts on a loaded machine.
 * Every other timer (the providers' own, Hello's, the stop's) is the host's.
 */
function heldDeadlineClock(): { clock: Clock; fire(): void } {
  const held = new Map<TimerId, () => void>();
  let next = 0;
  return {
    clock: {
      ...systemClock,
      setTimer(fn, ms) {
        if (!START_ALL_DEADLINE.test(new Error().stack ?? "")) return systemClock.setTimer(fn, ms);
        const id = `held-start-deadline-${next++}`;
        held.set(id, fn);
        return id;
      },
      clearTimer(id) {
        if (!held.delete(id)) systemClock.clearTimer(id);
      },
    },
    fire() {
      assert.equal(held.size, 1, "startAll's deadline is armed, once");
      for (const [id, fn] of held) {
        held.delete(id);
        fn();
      }
    },
  };
}

Deno.test("ProviderRegistry.startAll names every provider that failed, and every one still starting at the deadline", async () => {
  const failing = await registryOf([
    { ...OK_INVENTORY, hello: { protocol: "old" } },
    OK_INVENTORY,
    { ...OK_INVENTORY, hello: { protocol: "older" } },
  ]);
  try {
    await assert.rejects(failing.registry.startAll(30_000, 1000), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "UNAVAILABLE");
      assert.match(
        e.message,
        /^provider start failed: p0: provider speaks protocol 'old', expected '\w+'; p2: provider speaks protocol 'older', expected '\w+'$/,
      );
      return true;
    });
    assert.equal(failing.pids.length, 3);
    assert.deepEqual(failing.pids.filter(processAlive), [], "every provider process ended first");
  } finally {
    await failing.close();
  }
  const deadline = heldDeadlineClock();
  const slow = await registryOf([
    { ...OK_INVENTORY, hello: { hang: true } },
    // Up in time, and slower to exit once stopped than the hanging ones take to end: startAll
    // must wait for it.
    { ...OK_INVENTORY, exitDelayMs: 1200 },
    { ...OK_INVENTORY, hello: { hang: true } },
  ], deadline.clock);
  try {
    const started = slow.registry.startAll(1500, 3000);
    const p1 = slow.registry.host("p1")!;
    await waitFor("p1 up before the deadline", () => p1.available, START_WAIT_MS);
    // The hanging two spawned too (on a loaded machine they may come after p1 is up): the case is
    // processes still starting at the deadline, each ended before startAll answers.
    await waitFor("every process spawned", () => slow.pids.length === 3, START_WAIT_MS);
    deadline.fire();
    await assert.rejects(
      started,
      /^RuntimeError: providers not ready within runtime\.startup_timeout_ms \(1500 ms\): p0, p2$/,
    );
    assert.equal(slow.pids.length, 3);
    assert.deepEqual(slow.pids.filter(processAlive), [], "every provider process ended first");
  } finally {
    await slow.close();
  }
});

Deno.test("ProviderRegistry lists devices in provider order and finds capabilities by provider and device", async () => {
  const r = await registryOf([
    { devices: { b: OK_INVENTORY.devices.d, a: OK_INVENTORY.devices.d } },
    { devices: { c: OK_INVENTORY.devices.d } },
  ]);
  try {
    await r.registry.startAll(30_000, 1000);
    assert.deepEqual(r.registry.devices().map((d) => `${d.providerId}/${d.deviceId}`), [
      "p0/b",
      "p0/a",
      "p1/c",
    ]);
    assert.equal(r.registry.capabilities("p1", "c")?.device.deviceId, "c");
    assert.equal(r.registry.capabilities("p1", "a"), undefined);
    assert.equal(r.registry.capabilities("nope", "a"), undefined);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0", "p1"]);
    assert.equal(r.registry.host("nope"), undefined);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry add/remove/reorder: eachHost sees present and added hosts, onHostRemoved removed ones, a taken id is refused", () => {
  const entry = (id: string) => programmableProvider(id, "/nonexistent.json");
  const registry = new ProviderRegistry([entry("a"), entry("b")], {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const seen: string[] = [];
  const gone: string[] = [];
  registry.eachHost((h) => seen.push(h.id));
  registry.onHostRemoved((h) => gone.push(h.id));
  assert.deepEqual(seen, ["a", "b"]);
  const c = registry.add(entry("c"));
  assert.deepEqual(seen, ["a", "b", "c"]);
  assert.equal(registry.host("c"), c);
  assert.throws(() => registry.add(entry("a")), (e) => {
    assert.ok(e instanceof RuntimeError);
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(e.message, "Provider already registered: a");
    return true;
  });
  const a = registry.host("a");
  assert.equal(registry.remove("a"), a);
  assert.equal(registry.remove("a"), undefined);
  assert.deepEqual(gone, ["a"]);
  assert.equal(registry.host("a"), undefined);
  registry.reorder(["c", "b"]);
  assert.deepEqual(registry.hosts.map((h) => h.id), ["c", "b"]);
  // An id no longer registered is skipped; a host not named keeps its place after the others.
  registry.add(entry("d"));
  registry.reorder(["gone", "d", "b"]);
  assert.deepEqual(registry.hosts.map((h) => h.id), ["d", "b", "c"]);
});

Deno.test("ProviderRegistry.onUnconfigured tells once each id the configuration drops, host or not: not one a reload keeps without a host", async () => {
  const entry = (id: string) => programmableProvider(id, "/nonexistent.json");
  const registry = new ProviderRegistry([entry("a"), entry("b")], {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const told: string[] = [];
  registry.onHostRemoved((h) => told.push(`removed ${h.id}`));
  registry.onUnconfigured((id) => told.push(`unconfigured ${id}`));
  registry.remove("a");
  registry.remove("a");
  assert.deepEqual(told, ["removed a", "unconfigured a"], "after its host, once");
  told.length = 0;
  // c's host cannot be registered (a host listener fails): configured, no host.
  registry.eachHost((h) => {
    if (h.id === "c") throw new Error("listener broke");
  });
  const o = {
    holdRemovals: false,
    stopBudgetMs: 1000,
    startBudgetMs: 30_000,
    stopping: () => false,
  };
  const first = await registry.reconcile([entry("b")], [entry("b"), entry("c")], o);
  assert.match(first.failed.map(failedStartText).join(), /^c: Provider c not registered/);
  assert.deepEqual(told, ["removed c"], "the roll-back's host taken out; c stays configured");
  assert.deepEqual([registry.configured("c"), registry.configuredWithoutHost()], [true, ["c"]]);
  // A file without c, equal to the entries in effect: c is dropped, with no host to take out.
  told.length = 0;
  const second = await registry.reconcile([entry("b")], [entry("b")], o);
  assert.deepEqual([second.removed, second.cleared], [[], ["c"]]);
  assert.deepEqual(told, ["unconfigured c"]);
  assert.deepEqual([registry.configured("c"), registry.configuredWithoutHost()], [false, []]);
});

/** The inventory of a provider whose one device `dev` claims `keys` (anolis.claim). */
const claiming = (dev: string, keys: string) => ({
  devices: { [dev]: { signals: [{ id: "x", type: T.DOUBLE }], tags: { "anolis.claim": keys } } },
});

/**
 * Programmable providers p0, p1, ... over these inventories (files the test may rewrite: a
 * process reads its file when it starts), restarts enabled (`restart`: their policy), every
 * warn/error line kept.
 */
async function claimRegistry(
  inventories: object[],
  restart: Partial<RestartPolicyConfig> = { backoffMs: [0, 0, 0] },
) {
  const files: string[] = [];
  for (const inv of inventories) {
    const file = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(inv));
    files.push(file);
  }
  const lines: string[] = [];
  const registry = new ProviderRegistry(
    files.map((f, i) => programmableProvider(`p${i}`, f, { restart })),
    {
      spawn: spawnProcess,
      clock: systemClock,
      log: capturingLogger({ level: "warn", now: () => 0, lines }).log,
      bus: new EventBus(),
      cwd: Deno.cwd(),
      shutdownTimeoutMs: 1000,
    },
  );
  return {
    registry,
    files,
    lines,
    async close() {
      await registry.stopAll(1000);
      for (const f of files) await Deno.remove(f).catch(() => {});
    },
  };
}

const KEY = "i2c:/dev/i2c-1:0x61";

Deno.test("start-up refuses two provider processes claiming one anolis.claim key, naming both owners and the key", async () => {
  const r = await claimRegistry([
    claiming("dcmt_0", `gpio:4 ${KEY}`),
    OK_INVENTORY,
    claiming("do_0", KEY),
  ]);
  const pids: number[] = [];
  for (const h of r.registry.hosts) h.onInventory(() => pids.push(h.session?.pid ?? 0));
  try {
    await assert.rejects(r.registry.startAll(30_000, 1000), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.equal(
        e.message,
        `Ownership validation failed; resource claim conflict: claim '${KEY}' held by p0/dcmt_0 and p2/do_0 ` +
          "(each anolis.claim key must belong to one device)",
      );
      return true;
    });
    assert.equal(pids.length, 3);
    assert.deepEqual(pids.filter(processAlive), [], "every provider process ended");
  } finally {
    await r.close();
  }
});

Deno.test("start-up counts the claims of a device a provider restarted during start-up no longer lists: a rival claiming its key fails start-up", async () => {
  // p1 is slow to list its devices: p0 is up, crashes and is back before p1 has answered.
  const r = await claimRegistry([claiming("dcmt_0", KEY), {
    ...claiming("do_0", KEY),
    listDelayMs: 3000,
  }]);
  try {
    const starting = r.registry.startAll(30_000, 1000).then(() => null, (e: Error) => e.message);
    const p0 = r.registry.host("p0")!;
    await waitFor("p0 up", () => p0.available, 10_000, 0);
    // p0's next process lists another device only: it keeps dcmt_0's claim (held_claims).
    await Deno.writeTextFile(r.files[0]!, JSON.stringify(claiming("ph_0", "gpio:9")));
    const first = pidOf(r.registry, "p0");
    Deno.kill(first, "SIGKILL");
    await waitFor("p0 back", () => p0.available && p0.session?.pid !== first, 10_000, 0);
    assert.deepEqual(p0.claimDevices.map((d) => d.device.deviceId), ["ph_0", "dcmt_0"]);
    assert.equal(
      await starting,
      `Ownership validation failed; resource claim conflict: claim '${KEY}' held by p0/dcmt_0 and p1/do_0 ` +
        "(each anolis.claim key must belong to one device)",
      r.lines.join("\n"),
    );
  } finally {
    await r.close();
  }
});

Deno.test("a provider claiming the key of an older provider's hw.bus_path + hw.i2c_address tags is refused at start-up", async () => {
  const r = await claimRegistry([
    { devices: { old: { signals: [{ id: "x", type: T.DOUBLE }], tags: bus("/dev/i2c-1", "61") } } },
    claiming("do_0", KEY),
  ]);
  try {
    await assert.rejects(
      r.registry.startAll(30_000, 1000),
      new RegExp(`claim '${KEY}' held by p0/old and p1/do_0`),
    );
  } finally {
    await r.close();
  }
});

Deno.test("a restart whose new inventory claims a key another provider holds fails; the provider stays down, the holder untouched", async () => {
  const r = await claimRegistry([claiming("dcmt_0", KEY), claiming("do_0", "i2c:/dev/i2c-1:0x62")]);
  try {
    await r.registry.startAll(30_000, 1000);
    const [p0, p1] = r.registry.hosts;
    const holder = p0!.session!.pid;
    // p1's next process claims p0's key; its current one dies.
    const pidFile = await Deno.makeTempFile();
    await Deno.writeTextFile(r.files[1]!, JSON.stringify({ ...claiming("do_0", KEY), pidFile }));
    Deno.kill(p1!.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => p1!.lifecycle === "CIRCUIT_OPEN");
    const failures = r.lines.filter((l) => /restart attempt \d failed/.test(l));
    assert.equal(failures.length, 3, r.lines.join("\n"));
    for (const f of failures) {
      assert.ok(
        f.endsWith(
          `failed: Ownership validation failed; resource claim conflict: claim '${KEY}' held by p0/dcmt_0 and p1/do_0 ` +
            "(each anolis.claim key must belong to one device)",
        ),
        f,
      );
    }
    assert.equal(p1!.available, false);
    assert.equal(p0!.available, true);
    assert.equal(p0!.session!.pid, holder);
    // Each refused process was ended; p1 keeps its last inventory (shown, not polled: it is down).
    const refused = (await Deno.readTextFile(pidFile)).trim().split("\n").map(Number);
    await Deno.remove(pidFile);
    assert.equal(refused.length, 3);
    assert.deepEqual(refused.filter(processAlive), []);
    assert.deepEqual(r.registry.devices().map((d) => `${d.providerId}/${d.deviceId}`), [
      "p0/dcmt_0",
      "p1/do_0",
    ]);
  } finally {
    await r.close();
  }
});

Deno.test("a reload adding a provider that claims a held key does not start it; one with its own key starts", async () => {
  const r = await claimRegistry([
    claiming("dcmt_0", KEY),
    claiming("do_0", KEY),
    claiming("ph_0", "i2c:/dev/i2c-1:0x63"),
  ]);
  try {
    const [first, clashing, fine] = r.registry.hosts.map((h) => h.config);
    // Start with p0 only: p1 and p2 come with the reload.
    r.registry.remove("p1");
    r.registry.remove("p2");
    await r.registry.startAll(30_000, 1000);
    const report = await r.registry.reconcile([first!], [first!, clashing!, fine!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.added, ["p2"]);
    assert.deepEqual(report.failed.map(failedStartText), [
      `p1: Ownership validation failed; resource claim conflict: claim '${KEY}' held by p0/dcmt_0 and p1/do_0 ` +
      "(each anolis.claim key must belong to one device)",
    ]);
    assert.deepEqual(report.effective.map((p) => p.id), ["p0", "p2"]);
    // p1 stays listed, down, with the reason, until the next reload.
    assert.deepEqual(r.registry.hosts.map((h) => [h.id, h.available]), [
      ["p0", true],
      ["p2", true],
      ["p1", false],
    ]);
    assert.match(r.registry.host("p1")!.startError!, /resource claim conflict/);
    assert.deepEqual(r.registry.failedStarts().map((h) => h.id), ["p1"]);
  } finally {
    await r.close();
  }
});

/** The pid of a host's running process. */
function pidOf(r: ProviderRegistry, id: string): number {
  const pid = r.host(id)?.session?.pid;
  assert.ok(pid !== undefined, `${id} runs`);
  return pid;
}

Deno.test("ProviderRegistry.reconcile adds, restarts, removes and keeps providers: each reported, the old processes ended, the hosts in the new order", async () => {
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY, OK_INVENTORY, OK_INVENTORY]);
  try {
    const [p0, p1, p2, p3] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p3"); // comes with the reload
    await r.registry.startAll(30_000, 1000);
    const before = {
      p0: pidOf(r.registry, "p0"),
      p1: pidOf(r.registry, "p1"),
      p2: pidOf(r.registry, "p2"),
    };
    const changed = { ...p1!, timeoutMs: p1!.timeoutMs + 1 };
    const restarting: string[][] = [];
    const report = await r.registry.reconcile([p0!, p1!, p2!], [p3!, changed, p0!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
      restarting: (ids) => restarting.push([...ids]),
    });
    assert.deepEqual(
      {
        added: report.added,
        restarted: report.restarted,
        removed: report.removed,
        unchanged: report.unchanged,
        failed: report.failed,
        held: report.held,
      },
      {
        added: ["p3"],
        restarted: ["p1"],
        removed: ["p2"],
        unchanged: ["p0"],
        failed: [],
        held: [],
      },
    );
    assert.deepEqual(report.effective, [p3, changed, p0]);
    assert.deepEqual(report.started.map((h) => h.id).sort(), ["p1", "p3"]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p3", "p1", "p0"]);
    assert.deepEqual(restarting, [["p2", "p1"], []], "said while they restart, cleared after");
    assert.equal(processAlive(before.p1), false, "the changed provider's old process ended");
    assert.equal(processAlive(before.p2), false, "the removed provider's process ended");
    assert.equal(pidOf(r.registry, "p0"), before.p0, "the unchanged one untouched");
    assert.notEqual(pidOf(r.registry, "p1"), before.p1);
    assert.ok(r.registry.hosts.every((h) => h.available));
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile holding removals (AUTO) keeps the removed and changed providers on their old entries, each once", async () => {
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY, OK_INVENTORY]);
  try {
    const [p0, p1, p2] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p2");
    await r.registry.startAll(30_000, 1000);
    const pids = [pidOf(r.registry, "p0"), pidOf(r.registry, "p1")];
    const changed = { ...p0!, timeoutMs: p0!.timeoutMs + 1 };
    const report = await r.registry.reconcile([p0!, p1!], [changed, p2!], {
      holdRemovals: true,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.held, ["p1", "p0"]);
    assert.deepEqual(
      [report.added, report.restarted, report.removed, report.failed],
      [["p2"], [], [], []],
    );
    assert.deepEqual(
      report.effective,
      [p0, p2, p1],
      "the old p0 where the new one stands, p1 after",
    );
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0", "p2", "p1"]);
    assert.deepEqual([pidOf(r.registry, "p0"), pidOf(r.registry, "p1")], pids, "both untouched");
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile while the runtime stops: a provider not started yet is not, one that came up meanwhile is stopped again", async () => {
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY, { ...OK_INVENTORY, exitDelayMs: 500 }]);
  const added = new Map<string, import("../../src/providers/mod.ts").ProviderHost>();
  r.registry.eachHost((h) => added.set(h.id, h));
  try {
    const [p0, p1, p2] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p1");
    r.registry.remove("p2");
    await r.registry.startAll(30_000, 1000);
    // Shutdown began before the reload's starts.
    const early = await r.registry.reconcile([p0!], [p0!, p1!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => true,
    });
    assert.deepEqual(early.failed, [{ id: "p1", why: "the runtime is stopping" }]);
    assert.deepEqual([early.added, early.effective], [[], [p0]]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"]);
    // Shutdown began while p2 was starting: it must not outlive the runtime.
    let asked = 0;
    const late = await r.registry.reconcile([p0!], [p0!, p2!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => asked++ > 0,
    });
    assert.deepEqual(late.failed, [{ id: "p2", why: "the runtime is stopping" }]);
    assert.deepEqual([late.added, late.effective], [[], [p0]]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"]);
    const p2Host = added.get("p2")!;
    assert.equal(p2Host.available, false);
    assert.equal(p2Host.session, null);
    assert.deepEqual(r.pids.filter(processAlive), [pidOf(r.registry, "p0")], "p2's process ended");
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile bounds an added provider's start by its start budget: one answering each DescribeDevice within timeout_ms but not done in time is a failed start, listed down, its process ended", async () => {
  // Each DescribeDevice is answered well within timeout_ms; 40 of them take some 8 s.
  const devices = Object.fromEntries(
    Array.from({ length: 40 }, (_, i) => [`d${i}`, { signals: [{ id: "x", type: T.DOUBLE }] }]),
  );
  const r = await registryOf([OK_INVENTORY, { devices, describeDelayMs: 200 }]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p1"); // comes with the reload
    await r.registry.startAll(30_000, 1000);
    const slow = { ...p1!, timeoutMs: 1000 };
    const report = await r.registry.reconcile([p0!], [p0!, slow], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 3000,
      stopping: () => false,
    });
    assert.deepEqual([report.added, report.effective], [[], [p0]]);
    assert.equal(report.failed.length, 1, JSON.stringify(report.failed));
    assert.match(
      failedStartText(report.failed[0]!),
      /^p1: provider start not complete within runtime\.startup_timeout_ms \(3000 ms\) (during|after) (handshake|discovery) \(\d+ ms\)/,
    );
    const host = r.registry.host("p1")!;
    assert.deepEqual(r.registry.failedStarts(), [host], "listed down until the next reload");
    assert.equal(host.available, false);
    assert.match(host.startError ?? "", /runtime\.startup_timeout_ms \(3000 ms\)/);
    assert.match(
      r.registry.startFailureText("p1") ?? "",
      /failed to start at a configuration reload/,
    );
    assert.deepEqual(r.pids.filter(processAlive), [pidOf(r.registry, "p0")], "p1's process ended");
  } finally {
    await r.close();
  }
});

Deno.test("a provider restarted with the keys it claimed before comes back: its own last inventory is not a rival", async () => {
  const r = await claimRegistry([claiming("dcmt_0", KEY), claiming("do_0", "i2c:/dev/i2c-1:0x62")]);
  try {
    await r.registry.startAll(30_000, 1000);
    const p0 = r.registry.host("p0")!;
    const first = p0.session!.pid;
    Deno.kill(first, "SIGKILL");
    await waitFor("p0 back", () => p0.available && p0.session !== null && p0.session.pid !== first);
    assert.deepEqual(r.lines.filter((l) => /restart attempt \d failed/.test(l)), []);
  } finally {
    await r.close();
  }
});

Deno.test("a provider back up without devices, its host unmet, keeps its claims: a rival's restart claiming its key is refused, and its own restart once the host is fixed gets its devices back", async () => {
  const r = await claimRegistry([claiming("dcmt_0", KEY), claiming("do_0", "i2c:/dev/i2c-1:0x62")]);
  try {
    await r.registry.startAll(30_000, 1000);
    const [p0, p1] = [r.registry.host("p0")!, r.registry.host("p1")!];
    // The holder's bus goes missing: its restart comes up, not ready, without devices.
    await Deno.writeTextFile(r.files[0]!, JSON.stringify(HOST_UNMET_I2C1));
    const first0 = pidOf(r.registry, "p0");
    Deno.kill(first0, "SIGKILL");
    await waitFor(
      "p0 up without devices",
      () => p0.available && p0.session !== null && p0.session.pid !== first0,
    );
    assert.deepEqual(p0.devices, []);
    assert.equal(p0.hostCheck()?.status, "unmet");
    // A rival's next process claims the holder's key; its current one dies.
    await Deno.writeTextFile(r.files[1]!, JSON.stringify(claiming("do_0", KEY)));
    Deno.kill(pidOf(r.registry, "p1"), "SIGKILL");
    await waitFor("p1 down", () => !p1.available, 10000, 0);
    await waitFor("p1 back or given up", () => p1.available || p1.lifecycle === "CIRCUIT_OPEN");
    assert.equal(
      p1.available,
      false,
      `p1 admitted with p0/dcmt_0's key '${KEY}' while p0 waits for its host\n` +
        r.lines.join("\n"),
    );
    assert.ok(
      r.lines.some((l) => l.includes(`claim '${KEY}' held by p0/dcmt_0 and p1/do_0`)),
      r.lines.join("\n"),
    );
    // The host is fixed: the holder's own restart finds its bus free and its device back.
    await Deno.writeTextFile(r.files[0]!, JSON.stringify(claiming("dcmt_0", KEY)));
    const second0 = pidOf(r.registry, "p0");
    Deno.kill(second0, "SIGKILL");
    await waitFor(
      "p0 back with its device",
      () =>
        p0.available && p0.session !== null && p0.session.pid !== second0 &&
        p0.devices.length === 1,
    );
  } finally {
    await r.close();
  }
});

/** p0's second device's key (KEY is its first's). */
const KEY2 = "i2c:/dev/i2c-1:0x63";
/** p0's two devices, dcmt_0 claiming KEY and ph_0 KEY2. */
const TWO_DEVICES = {
  devices: {
    ...claiming("dcmt_0", KEY).devices,
    ...claiming("ph_0", KEY2).devices,
  },
};

Deno.test("a provider restarted with one device failing its init keeps that device's claims: a rival's restart claiming its key is refused, and the holder's next full restart is admitted", async () => {
  const r = await claimRegistry([TWO_DEVICES, claiming("do_0", "i2c:/dev/i2c-1:0x62")]);
  try {
    await r.registry.startAll(30_000, 1000);
    const [p0, p1] = [r.registry.host("p0")!, r.registry.host("p1")!];
    // ph_0 fails its init: the holder's next process lists dcmt_0 alone.
    await Deno.writeTextFile(r.files[0]!, JSON.stringify(claiming("dcmt_0", KEY)));
    const first0 = pidOf(r.registry, "p0");
    Deno.kill(first0, "SIGKILL");
    await waitFor(
      "p0 back with one device",
      () => p0.available && p0.session !== null && p0.session.pid !== first0,
    );
    assert.deepEqual(p0.devices.map((d) => d.device.deviceId), ["dcmt_0"]);
    // A rival's next process claims the failed device's key; its current one dies.
    await Deno.writeTextFile(r.files[1]!, JSON.stringify(claiming("do_0", KEY2)));
    Deno.kill(pidOf(r.registry, "p1"), "SIGKILL");
    await waitFor("p1 down", () => !p1.available, 10000, 0);
    await waitFor("p1 back or given up", () => p1.available || p1.lifecycle === "CIRCUIT_OPEN");
    assert.equal(
      p1.available,
      false,
      `p1 admitted with p0/ph_0's key '${KEY2}' while p0 runs without it\n` + r.lines.join("\n"),
    );
    assert.ok(
      r.lines.some((l) => l.includes(`claim '${KEY2}' held by p0/ph_0 and p1/do_0`)),
      r.lines.join("\n"),
    );
    // The device is fixed: the holder's next restart lists both again and is admitted.
    await Deno.writeTextFile(r.files[0]!, JSON.stringify(TWO_DEVICES));
    const second0 = pidOf(r.registry, "p0");
    Deno.kill(second0, "SIGKILL");
    await waitFor(
      "p0 back with both devices",
      () =>
        p0.available && p0.session !== null && p0.session.pid !== second0 &&
        p0.devices.length === 2,
    );
    assert.deepEqual(p0.devices.map((d) => d.device.deviceId), ["dcmt_0", "ph_0"]);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.startAll at its deadline names a provider not ready with the last lines it wrote", async () => {
  const deadline = heldDeadlineClock();
  const slow = await registryOf([
    { ...OK_INVENTORY, hello: { hang: true }, stderr: ["waiting for /dev/i2c-1"] },
    OK_INVENTORY,
  ], deadline.clock);
  try {
    const started = slow.registry.startAll(1500, 1000);
    const [p0, p1] = slow.registry.hosts;
    await waitFor(
      "p1 up and p0's stderr line read before the deadline",
      () => p1!.available && p0!.stderrTail.some((l) => l.includes("waiting for /dev/i2c-1")),
      START_WAIT_MS,
    );
    deadline.fire();
    await assert.rejects(
      started,
      /^RuntimeError: providers not ready within runtime\.startup_timeout_ms \(1500 ms\): p0 \(provider's last stderr line: "waiting for \/dev\/i2c-1"\)$/,
    );
  } finally {
    await slow.close();
  }
});

Deno.test("ProviderRegistry.startAll at its deadline names a provider that already failed with its reason, not as not ready", async () => {
  const deadline = heldDeadlineClock();
  const mixed = await registryOf([
    { ...OK_INVENTORY, hello: { protocol: "old" } },
    { ...OK_INVENTORY, hello: { hang: true } },
  ], deadline.clock);
  try {
    const started = mixed.registry.startAll(1500, 1000);
    const p0 = mixed.registry.host("p0")!;
    await waitFor(
      "p0's start failed before the deadline",
      () => p0.startError !== null,
      START_WAIT_MS,
    );
    deadline.fire();
    await assert.rejects(started, (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "DEADLINE_EXCEEDED");
      assert.match(
        e.message,
        /^providers not ready within runtime\.startup_timeout_ms \(1500 ms\): p1; provider start failed: p0: provider speaks protocol 'old', expected '\w+'$/,
      );
      return true;
    });
    assert.deepEqual(mixed.pids.filter(processAlive), [], "every provider process ended first");
  } finally {
    await mixed.close();
  }
});

Deno.test("describeNotReady names a provider whose start failed with its reason (the start-up timeout's log line quotes it)", async () => {
  const r = await registryOf([{ ...OK_INVENTORY, hello: { protocol: "old" } }, OK_INVENTORY]);
  try {
    const [failed, notStarted] = r.registry.hosts;
    await assert.rejects(failed!.start(), /provider speaks protocol 'old'/);
    assert.match(
      describeNotReady(failed!),
      /^p0 \(start failed: provider speaks protocol 'old', expected '\w+'\)$/,
    );
    assert.equal(describeNotReady(notStarted!), "p1");
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile ends a changed provider's old process before its successor is added, and does not count a successor that fails as restarted", async () => {
  const r = await registryOf([OK_INVENTORY, { ...OK_INVENTORY, exitDelayMs: 500 }]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    await r.registry.startAll(30_000, 1000);
    const old = pidOf(r.registry, "p1");
    const aliveAtAdd: boolean[] = [];
    r.registry.eachHost((h) => {
      if (h.id === "p1" && h.session === null) aliveAtAdd.push(processAlive(old));
    });
    aliveAtAdd.length = 0; // (eachHost also calls for the hosts there now)
    // The successor's process speaks another protocol: its start fails.
    await Deno.writeTextFile(
      r.files[1]!,
      JSON.stringify({ ...OK_INVENTORY, hello: { protocol: "old" } }),
    );
    const report = await r.registry.reconcile([p0!, p1!], [p0!, {
      ...p1!,
      timeoutMs: p1!.timeoutMs + 1,
    }], {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(aliveAtAdd, [false], "the old process had ended when the new host was added");
    assert.deepEqual(report.restarted, []);
    assert.equal(report.failed.length, 1);
    assert.match(failedStartText(report.failed[0]!), /^p1: provider speaks protocol 'old'/);
    assert.deepEqual(report.effective, [p0]);
    // The successor stays listed, down and stopped, until the next reload takes it out.
    assert.deepEqual(r.registry.hosts.map((h) => [h.id, h.available]), [["p0", true], [
      "p1",
      false,
    ]]);
    assert.equal(r.registry.host("p1")!.session, null);
    const next = await r.registry.reconcile([p0!], [p0!], {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual([next.cleared, next.removed], [["p1"], []]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"]);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.lastListed keeps a restarted provider's last inventory, never routable, until a host under its id lists its own, and drops it with the provider", async () => {
  const r = await registryOf([OK_INVENTORY, { ...OK_INVENTORY, exitDelayMs: 800 }]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    await r.registry.startAll(30_000, 1000);
    const opts = { holdRemovals: false, stopBudgetMs: 5000, startBudgetMs: 30_000 };
    const devs = (look: (p: string, d: string) => unknown) =>
      [look("p1", "d"), look("p1", "e")]
        .map((c) => c !== undefined);
    const lastListed = (p: string, d: string) => r.registry.lastListed(p, d);
    const capabilities = (p: string, d: string) => r.registry.capabilities(p, d);
    // Its successor lists another device, after answering Hello 800 ms late.
    await Deno.writeTextFile(
      r.files[1]!,
      JSON.stringify({ devices: { e: OK_INVENTORY.devices.d }, hello: { delayMs: 800 } }),
    );
    const restart = r.registry.reconcile([p0!, p1!], [p0!, { ...p1!, timeoutMs: 5001 }], {
      ...opts,
      stopping: () => false,
    });
    await waitFor(
      "p1's old host out, its successor not registered",
      () => r.registry.host("p1") === undefined && r.registry.replacing("p1"),
    );
    assert.deepEqual(devs(lastListed), [true, false], "the old process's inventory");
    assert.deepEqual(devs(capabilities), [false, false], "nothing to call");
    await waitFor("p1's successor registered", () => r.registry.host("p1") !== undefined);
    assert.equal(r.registry.host("p1")!.available, false);
    assert.deepEqual(devs(lastListed), [true, false], "still the old one: nothing listed yet");
    assert.deepEqual(devs(capabilities), [false, false]);
    assert.deepEqual((await restart).restarted, ["p1"]);
    assert.deepEqual(devs(lastListed), [false, true], "its own, the old one dropped");
    assert.deepEqual(devs(capabilities), [false, true]);
    // A successor that never lists (its start fails) leaves the last inventory in place...
    await Deno.writeTextFile(
      r.files[1]!,
      JSON.stringify({ ...OK_INVENTORY, hello: { protocol: "old" } }),
    );
    const failed = await r.registry.reconcile([p0!, { ...p1!, timeoutMs: 5001 }], [p0!, p1!], {
      ...opts,
      stopping: () => false,
    });
    assert.deepEqual(failed.restartFailed, ["p1"]);
    assert.deepEqual(devs(lastListed), [false, true]);
    assert.deepEqual(devs(capabilities), [false, false]);
    // ...until a reload drops the provider.
    await r.registry.reconcile([p0!], [p0!], { ...opts, stopping: () => false });
    assert.equal(r.registry.configured("p1"), false);
    assert.deepEqual(devs(lastListed), [false, false]);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.stopAll during a reload also waits for the providers the reload is ending", async () => {
  const r = await registryOf([OK_INVENTORY, { ...OK_INVENTORY, exitDelayMs: 800 }]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    await r.registry.startAll(30_000, 1000);
    const removed = pidOf(r.registry, "p1");
    // The reload takes p1 out and is ending it (its process takes 800 ms to exit) when the
    // runtime is told to stop.
    const reload = r.registry.reconcile([p0!, p1!], [p0!], {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"]);
    await r.registry.stopAll(5000);
    assert.equal(processAlive(removed), false, "the shutdown waited for the reload's stop");
    assert.deepEqual((await reload).removed, ["p1"]);
  } finally {
    await r.close();
  }
});

/** A provider that lives on past stdin's close, ignoring SIGTERM: only SIGKILL ends it. */
const STUBBORN = "trap '' TERM; PROVIDER; exec sleep 1000";

/**
 * Two providers started under a manual clock (time moves only when the test moves it), `stubborn`
 * of them ignoring stdin's close and SIGTERM (STUBBORN), and a reload under way that takes p1 out
 * and ends it within its 60 s (36 s of them for stdin's close): `fn` runs once p1 is being retired.
 * The reload's end and the registry's close are waited for whatever `fn` does.
 */
async function whileRetiringP1(
  stubborn: readonly ("p0" | "p1")[],
  fn: (
    r: Awaited<ReturnType<typeof registryOf>>,
    o: { clock: ManualClock; lines: string[]; kept: number; removed: number },
  ) => Promise<void>,
): Promise<void> {
  const clock = new ManualClock();
  const lines: string[] = [];
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY], clock, {
    sh: Object.fromEntries(stubborn.map((id) => [id, STUBBORN])),
    lines,
  });
  let reload: Promise<unknown> = Promise.resolve();
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    await settleOn(clock, r.registry.startAll(30_000, 1000)); // its due timers only: time stands
    const kept = pidOf(r.registry, "p0");
    const removed = pidOf(r.registry, "p1");
    reload = r.registry.reconcile([p0!, p1!], [p0!], {
      holdRemovals: false,
      stopBudgetMs: 60_000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    await waitFor("p1 being retired", () => r.registry.retiringHosts().length === 1);
    await fn(r, { clock, lines, kept, removed });
  } finally {
    await settleMovingTime(clock, reload.then(() => r.close()));
  }
}

/** The WARN of a provider killed because a second stop signal hurried the stop. */
const HURRY_KILL = "the runtime's stop was hurried by a second stop signal: sending SIGKILL";

Deno.test("ProviderRegistry.stopAll with a budget ending before a reload's stop still under way kills the provider that reload is retiring when that budget runs out", async () => {
  await whileRetiringP1(["p1"], async (r, { clock, lines, removed }) => {
    // A hurried runtime stop gives the providers 1 s.
    const stopped = r.registry.stopAll(1000);
    await elapseOn(clock, 1000, "the hurried stop's budget");
    await waitFor("the retired provider killed", () => !processAlive(removed));
    await stopped;
    assert.ok(
      lines.some((l) => l.includes("not exited within a later stop's budget (1000 ms")),
      lines.join("\n"),
    );
  });
});

Deno.test("ProviderRegistry.stopAll hurried (a second stop signal) while it runs kills at once both the providers it ends and the one a reload is retiring", async () => {
  // Time stands: only the kill may end the stops.
  await whileRetiringP1(["p0", "p1"], async (r, { lines, kept, removed }) => {
    // The runtime's stop gives p0 60 s too, and a second stop signal comes meanwhile.
    const hurry = Promise.withResolvers<void>();
    const stopped = r.registry.stopAll(60_000, hurry.promise);
    assert.equal(lines.filter((l) => l.includes(HURRY_KILL)).length, 0, "no kill before");
    hurry.resolve();
    await waitFor("both killed", () => !processAlive(kept) && !processAlive(removed));
    await stopped;
    assert.equal(lines.filter((l) => l.includes(HURRY_KILL)).length, 2, lines.join("\n"));
  });
});

Deno.test("ProviderRegistry.stopAll hurried before it began kills at once both the providers it ends and the one a reload is retiring", async () => {
  await whileRetiringP1(["p0", "p1"], async (r, { lines, kept, removed }) => {
    await r.registry.stopAll(60_000, Promise.resolve());
    assert.ok(!processAlive(kept) && !processAlive(removed));
    assert.equal(lines.filter((l) => l.includes(HURRY_KILL)).length, 2, lines.join("\n"));
  });
});

Deno.test("ProviderRegistry.stopAll whose kill at the hurry throws still waits for every provider, then rejects naming that kill", async () => {
  await whileRetiringP1([], async (r, { kept, removed }) => {
    r.registry.host("p0")!.killStopping = () => {
      throw new Error("kill refused");
    };
    const err = await r.registry.stopAll(60_000, Promise.resolve()).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof RuntimeError, String(err));
    assert.equal(err.code, "INTERNAL");
    assert.match(
      err.message,
      /^the providers' kill at the hurry \(a second stop signal\) failed: kill refused; /,
    );
    assert.ok(!processAlive(kept) && !processAlive(removed), "both stopped all the same");
  });
});

Deno.test("a down provider keeps its claims: a reload adding a rival is refused while it is down, and the rival starts once a reload removes the holder", async () => {
  const r = await claimRegistry([claiming("dcmt_0", KEY), claiming("do_0", KEY)]);
  try {
    const [holder, rival] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p1"); // comes with the reload
    await r.registry.startAll(30_000, 1000);
    const p0 = r.registry.host("p0")!;
    // The holder crashes and cannot come back (its restarts speak another protocol).
    await Deno.writeTextFile(
      r.files[0]!,
      JSON.stringify({ ...claiming("dcmt_0", KEY), hello: { protocol: "old" } }),
    );
    Deno.kill(p0.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => p0.lifecycle === "CIRCUIT_OPEN", 20_000);
    const opts = {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    };
    // The reload retries the holder (its circuit is open; the retry fails as well): its claims
    // hold through the retry, and the rival is refused.
    const refused = await r.registry.reconcile([holder!], [holder!, rival!], opts);
    assert.deepEqual(refused.failed.map(failedStartText).toSorted(), [
      "p0: provider speaks protocol 'old', expected 'v1'",
      `p1: Ownership validation failed; resource claim conflict: claim '${KEY}' held by p0/dcmt_0 and p1/do_0 ` +
      "(each anolis.claim key must belong to one device)",
    ]);
    assert.deepEqual(refused.retried, []);
    // The failed retry is the first failure of a new streak: its restart_policy goes on.
    assert.equal(p0.lifecycle, "RESTARTING");
    // Removing the holder's entry releases its claims.
    const taken = await r.registry.reconcile([holder!], [rival!], opts);
    assert.deepEqual([taken.removed, taken.added, taken.failed], [["p0"], ["p1"], []]);
    assert.equal(r.registry.host("p1")!.available, true);
  } finally {
    await r.close();
  }
});

Deno.test("a reload changing only restart_policy of a holder whose circuit is open keeps its claims: a rival's restart in backoff meanwhile is refused", async () => {
  const r = await claimRegistry(
    [claiming("dcmt_0", KEY), claiming("do_0", "i2c:/dev/i2c-1:0x62")],
    { maxAttempts: 1, backoffMs: [1000] },
  );
  try {
    await r.registry.startAll(30_000, 1000);
    const [p0, p1] = [r.registry.host("p0")!, r.registry.host("p1")!];
    const [holder, rival] = [p0.config, p1.config];
    // The holder crashes and cannot come back (its restart speaks another protocol).
    await Deno.writeTextFile(
      r.files[0]!,
      JSON.stringify({ ...claiming("dcmt_0", KEY), hello: { protocol: "old" } }),
    );
    Deno.kill(p0.session!.pid, "SIGKILL");
    await waitFor("p0's circuit open", () => p0.lifecycle === "CIRCUIT_OPEN", 20_000);
    // Fixed now, and slow to answer Hello: the reload's start of it takes 4 s.
    await Deno.writeTextFile(
      r.files[0]!,
      JSON.stringify({ ...claiming("dcmt_0", KEY), hello: { delayMs: 4000 } }),
    );
    // The rival's next process claims the holder's key; its current one dies: its restart is
    // due 1 s on, while the reload brings the holder back.
    await Deno.writeTextFile(r.files[1]!, JSON.stringify(claiming("do_0", KEY)));
    Deno.kill(p1.session!.pid, "SIGKILL");
    await waitFor("p1 in backoff", () => p1.state.phase === "BACKOFF", 10_000, 0);
    const policy = { ...holder.restartPolicy, successResetMs: 1234 };
    const report = await r.registry.reconcile(
      [holder, rival],
      [{ ...holder, restartPolicy: policy }, rival],
      { holdRemovals: false, stopBudgetMs: 1000, startBudgetMs: 30_000, stopping: () => false },
    );
    await waitFor("p1's restart over", () => p1.available || p1.lifecycle === "CIRCUIT_OPEN");
    assert.deepEqual(report.failed, [], r.lines.join("\n"));
    assert.deepEqual([report.updated, report.retried, report.restarted], [
      [{ id: "p0", fields: ["restart_policy"] }],
      ["p0"],
      [],
    ]);
    assert.equal(r.registry.host("p0"), p0, "the same host, its policy replaced in place");
    assert.deepEqual(p0.config.restartPolicy, policy);
    assert.equal(p0.available, true);
    assert.deepEqual(p0.claimDevices.map((d) => d.device.deviceId), ["dcmt_0"]);
    assert.equal(p1.available, false, `p1 took p0/dcmt_0's key '${KEY}'\n${r.lines.join("\n")}`);
    assert.ok(
      r.lines.some((l) => l.includes(`claim '${KEY}' held by p0/dcmt_0 and p1/do_0`)),
      r.lines.join("\n"),
    );
  } finally {
    await r.close();
  }
});

Deno.test("a provider a reload removes keeps its claims until its process has ended: another's restart claiming its key waits", async () => {
  const r = await claimRegistry([
    { ...claiming("dcmt_0", KEY), exitDelayMs: 2500 }, // slow to exit once stopped
    claiming("do_0", "i2c:/dev/i2c-1:0x62"),
  ]);
  try {
    await r.registry.startAll(30_000, 1000);
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    const oldPid = pidOf(r.registry, "p0");
    const reconciling = r.registry.reconcile([p0!, p1!], [p1!], {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    await waitFor("p0 out of the registry", () => r.registry.host("p0") === undefined, 10000, 0);
    assert.ok(processAlive(oldPid), "p0's process is still ending");
    // p1's next process claims p0's key; its current one dies while p0's still runs.
    await Deno.writeTextFile(r.files[1]!, JSON.stringify(claiming("do_0", KEY)));
    const host1 = r.registry.host("p1")!;
    Deno.kill(host1.session!.pid, "SIGKILL");
    await waitFor("p1 down", () => !host1.available, 10000, 0);
    await waitFor(
      "p1 back or given up",
      () => host1.available || host1.lifecycle === "CIRCUIT_OPEN" || !processAlive(oldPid),
    );
    assert.ok(
      !(host1.available && processAlive(oldPid)),
      `p1 admitted with p0/dcmt_0's key '${KEY}' while p0's process still runs\n` +
        r.lines.join("\n"),
    );
    await reconciling;
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile with a host listener that throws on an added provider: the host is taken out again and reported failed, never left registered but not started", async () => {
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p1"); // comes with the reload
    await r.registry.startAll(30_000, 1000);
    const gone: string[] = [];
    r.registry.onHostRemoved((h) => gone.push(h.id));
    r.registry.eachHost((h) => {
      if (h.id === "p1") throw new Error("listener broke");
    });
    const report = await r.registry.reconcile([p0!], [p0!, p1!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.added, []);
    assert.deepEqual(report.failed, [
      { id: "p1", why: "Provider p1 not registered: a host listener failed: listener broke" },
    ]);
    assert.deepEqual(report.effective, [p0]);
    assert.equal(r.registry.host("p1"), undefined, "not left registered");
    assert.deepEqual(gone, ["p1"], "the listeners that took it are told it is gone");
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"]);
    assert.equal(r.pids.length, 1, "p1 never spawned");
    // The next reload adds it again (no "already registered").
    const again = await r.registry.reconcile([p0!], [p0!, p1!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.equal(again.failed.length, 1);
    assert.match(again.failed[0]!.why, /a host listener failed/);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.reconcile with a host-removed listener that throws still ends the removed provider's process", async () => {
  const r = await registryOf([OK_INVENTORY, OK_INVENTORY]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    await r.registry.startAll(30_000, 1000);
    const pid = pidOf(r.registry, "p1");
    r.registry.onHostRemoved(() => {
      throw new Error("listener broke");
    });
    const report = await r.registry.reconcile([p0!, p1!], [p0!], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.removed, ["p1"]);
    assert.equal(r.registry.host("p1"), undefined);
    await waitFor("p1's process ended", () => !processAlive(pid), 5000);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry.whyNotRunning says why a configured provider has no host, in one wording, and configuredIds keeps the file's order", async () => {
  // p1's old process takes 1.5 s to exit once stopped: the reload starts p2 and p1's successor
  // only then.
  const r = await registryOf([OK_INVENTORY, { ...OK_INVENTORY, exitDelayMs: 1500 }, OK_INVENTORY]);
  try {
    const [p0, p1, p2] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p2"); // comes with the reload
    await r.registry.startAll(30_000, 1000);
    const opts = {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    };
    const why = () => ["p0", "p1", "p2", "nope"].map((id) => r.registry.whyNotRunning(id));
    assert.deepEqual(why(), [null, null, null, null], "hosts registered, or not configured");

    const changed = { ...p1!, timeoutMs: p1!.timeoutMs + 1 };
    const reload = r.registry.reconcile([p0!, p1!], [p0!, changed, p2!], opts);
    await waitFor("p1's old host out", () => r.registry.host("p1") === undefined, 10_000, 0);
    assert.deepEqual(why(), [
      null,
      "provider p1 is being restarted by a configuration reload",
      "provider p2 is being started by a configuration reload",
      null,
    ]);
    assert.deepEqual(r.registry.configuredIds(), ["p0", "p1", "p2"]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0"], "read within the window");
    assert.deepEqual((await reload).failed, []);
    assert.deepEqual(why(), [null, null, null, null]);

    // p1's successor cannot be registered (a host listener fails): its entry stays in the file.
    r.registry.eachHost((h) => {
      if (h.id === "p1" && h.session === null) throw new Error("listener broke");
    });
    const again = { ...changed, timeoutMs: changed.timeoutMs + 1 };
    const refused = await r.registry.reconcile([p0!, changed, p2!], [p0!, again, p2!], opts);
    assert.deepEqual(refused.failed, [
      { id: "p1", why: "Provider p1 not registered: a host listener failed: listener broke" },
    ]);
    assert.deepEqual(why(), [
      null,
      "provider p1 failed to start at a configuration reload (Provider p1 not registered: a " +
      "host listener failed: listener broke)",
      null,
      null,
    ]);
    assert.deepEqual(r.registry.configuredIds(), ["p0", "p1", "p2"]);
    assert.deepEqual(r.registry.hosts.map((h) => h.id), ["p0", "p2"]);

    // A reload that does not start it (the runtime stopping meanwhile): no start error known.
    const stopping = await r.registry.reconcile([p0!, p2!], [p0!, again, p2!], {
      ...opts,
      stopping: () => true,
    });
    assert.deepEqual(stopping.failed, [{ id: "p1", why: "the runtime is stopping" }]);
    assert.deepEqual(why(), [
      null,
      "provider p1 is not running: a configuration reload failed to start it",
      null,
      null,
    ]);
  } finally {
    await r.close();
  }
});

Deno.test("ProviderRegistry names a provider id of 10 kB cut to QUOTED_PROVIDER_ID_CHARS in its starting, start-failure and not-running texts", async () => {
  const r = await registryOf([OK_INVENTORY, { ...OK_INVENTORY, listDelayMs: 1500 }]);
  try {
    const [p0, p1] = r.registry.hosts.map((h) => h.config);
    r.registry.remove("p1"); // comes with the reload, under a 10 kB id
    await r.registry.startAll(30_000, 1000);
    const id = "q".repeat(10_000);
    const cut = `${"q".repeat(QUOTED_PROVIDER_ID_CHARS)}\u2026`;
    const long = { ...p1!, id };
    const opts = {
      holdRemovals: false,
      stopBudgetMs: 5000,
      startBudgetMs: 30_000,
      stopping: () => false,
    };
    // Started anew: its ListDevices answered after 1.5 s, so the text is read within the window.
    const adding = r.registry.reconcile([p0!], [p0!, long], opts);
    await waitFor("the reload starting it", () => r.registry.startingText(id) !== null, 10_000, 0);
    assert.equal(
      r.registry.startingText(id),
      `provider ${cut} is being started by a configuration reload`,
    );
    assert.deepEqual((await adding).failed, []);

    // Its successor cannot be registered (a host listener fails).
    r.registry.eachHost((h) => {
      if (h.id === id && h.session === null) throw new Error("listener broke");
    });
    const changed = { ...long, timeoutMs: long.timeoutMs + 1 };
    const refused = await r.registry.reconcile([p0!, long], [p0!, changed], opts);
    const notRegistered = `Provider ${cut} not registered: a host listener failed: listener broke`;
    assert.deepEqual(refused.failed, [{ id, why: notRegistered }]);
    assert.equal(
      r.registry.whyNotRunning(id),
      `provider ${cut} failed to start at a configuration reload (${notRegistered})`,
    );
    assert.equal(r.registry.startFailureText(id), r.registry.whyNotRunning(id));

    // A reload that does not start it (the runtime stopping meanwhile).
    await r.registry.reconcile([p0!], [p0!, changed], { ...opts, stopping: () => true });
    assert.equal(
      r.registry.whyNotRunning(id),
      `provider ${cut} is not running: a configuration reload failed to start it`,
    );
  } finally {
    await r.close();
  }
});
