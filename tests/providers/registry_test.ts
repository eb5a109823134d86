/**
 * ProviderRegistry: the bus ownership check over every provider's devices (findAddressConflict),
 * and start-up refusing a conflict with every provider stopped again.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { findAddressConflict, ProviderRegistry } from "../../src/providers/mod.ts";
import { processAlive, testLogger } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";

function device(
  providerId: string,
  deviceId: string,
  tags: Record<string, string> = {},
): DeviceCapabilities {
  return {
    device: {
      providerId,
      deviceId,
      providerName: "",
      typeId: "",
      typeVersion: "",
      label: "",
      address: "",
      tags,
    },
    functions: [],
    signals: [],
  };
}

const bus = (path: string, addr: string) => ({ "hw.bus_path": path, "hw.i2c_address": addr });

Deno.test("findAddressConflict: devices without bus tags, or on distinct bus addresses, do not conflict", () => {
  assert.equal(findAddressConflict([]), null);
  assert.equal(
    findAddressConflict([
      device("p0", "a"),
      device("p0", "b", { other: "tag" }),
      device("p0", "c", bus("/dev/i2c-1", "0x48")),
      device("p1", "d", bus("/dev/i2c-1", "0x49")),
      device("p1", "e", bus("/dev/i2c-2", "0x48")),
    ]),
    null,
  );
});

Deno.test("findAddressConflict names both devices and the bus address, written in any notation", () => {
  for (const [a, b] of [["0x48", "0x48"], ["0x48", "72"], ["0X48", " 0x48 "], ["0x4A", "0x4a"]]) {
    const key = `/dev/i2c-1@0x${Number(a.trim()).toString(16)}`;
    assert.equal(
      findAddressConflict([
        device("p0", "free", bus("/dev/i2c-1", "0x10")),
        device("p0", "first", bus("/dev/i2c-1", a)),
        device("p1", "second", bus("/dev/i2c-1", b)),
      ]),
      `devices p0/first and p1/second both claim bus address ${key}`,
      `${a} vs ${b}`,
    );
  }
});

Deno.test("findAddressConflict compares an address that is no number as lower-case text", () => {
  assert.equal(
    findAddressConflict([
      device("p0", "a", bus("spi0", " CS-A ")),
      device("p0", "b", bus("spi0", "cs-a")),
    ]),
    "devices p0/a and p0/b both claim bus address spi0@cs-a",
  );
  assert.equal(
    findAddressConflict([
      device("p0", "a", bus("spi0", "CS-A")),
      device("p0", "b", bus("spi0", "cs-b")),
    ]),
    null,
  );
});

Deno.test("findAddressConflict refuses a bus path without an address and an address without a bus", () => {
  assert.equal(
    findAddressConflict([
      device("p0", "ok"),
      device("p0", "half", { "hw.bus_path": "/dev/i2c-1" }),
    ]),
    "device p0/half: tags hw.bus_path and hw.i2c_address must be given together",
  );
  assert.equal(
    findAddressConflict([device("p1", "half", { "hw.i2c_address": "0x48" })]),
    "device p1/half: tags hw.bus_path and hw.i2c_address must be given together",
  );
});

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
        "devices p0/p0dev and p1/p1dev both claim bus address /dev/i2c-1@0x48",
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

/** A registry over programmable providers p0, p1, ... with these inventories. */
async function registryOf(inventories: object[]) {
  const files: string[] = [];
  for (const inv of inventories) {
    const file = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(inv));
    files.push(file);
  }
  // Every provider process started, to tell whether each has ended.
  const pids: number[] = [];
  const registry = new ProviderRegistry(
    files.map((f, i) => programmableProvider(`p${i}`, f, { helloTimeoutMs: 60_000 })),
    {
      spawn: (o) => {
        const proc = spawnProcess(o);
        pids.push(proc.pid);
        return proc;
      },
      clock: systemClock,
      log: testLogger(),
      bus: new EventBus(),
      cwd: Deno.cwd(),
      shutdownTimeoutMs: 1000,
    },
  );
  return {
    registry,
    pids,
    async close() {
      await registry.stopAll(1000);
      for (const f of files) await Deno.remove(f);
    },
  };
}

const OK_INVENTORY = { devices: { d: { signals: [{ id: "x", type: T.DOUBLE }] } } };

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
  const slow = await registryOf([
    { ...OK_INVENTORY, hello: { hang: true } },
    // Up in time, and slow to exit once stopped: startAll must wait for it.
    { ...OK_INVENTORY, exitDelayMs: 500 },
    { ...OK_INVENTORY, hello: { hang: true } },
  ]);
  try {
    await assert.rejects(
      slow.registry.startAll(1500, 1000),
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
