/**
 * A device's `device_availability` is dated no earlier than that device's flip before it
 * (docs/http-api.md, "Events"): also when its provider came back without it (a restart whose
 * discovery no longer lists it: its hardware unplugged, a host check unmet) and lists it again at
 * a later restart, after a step back of the wall clock (NTP on a Raspberry Pi without a real-time
 * clock). The programmable provider in-process, its inventory rewritten between restarts.
 */
import assert from "node:assert/strict";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";

const BOTH: Inventory = {
  devices: {
    d0: { signals: [{ id: "x", type: T.DOUBLE }] },
    d1: { signals: [{ id: "x", type: T.DOUBLE }] },
  },
};

Deno.test("StateCache dates a device listed again after a restart without it no earlier than its flip before it when the wall clock stepped back (NTP)", async () => {
  const fx = await startProgrammable(BOTH, {
    inProcess: true,
    restart: { backoffMs: [0, 0, 0] },
  });
  try {
    const t = 1_700_000_000_000;
    const d0Flips = () =>
      fx.events.flatMap((e) =>
        e.kind === "device_availability" && e.device_id === "d0"
          ? [[e.available, e.timestamp_ms - t] as [boolean, number]]
          : []
      );
    const restart = async () => {
      const pid = fx.kill();
      await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    };
    fx.clock.wallMs = t;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    // Its provider restarts and lists d1 alone: d0 went down with it, 1 s later.
    fx.clock.wallMs = t + 1_000;
    await fx.setInventory({ ...BOTH, list: ["d1"] });
    await restart();
    assert.deepEqual(fx.cache.providerDevices("p0").map((d) => d.deviceId), ["d1"]);
    // NTP steps the wall clock back a minute; the provider restarts listing d0 again.
    fx.clock.wallMs = t - 60_000;
    await fx.setInventory(BOTH);
    await restart();
    await fx.program("d0", { read: { values: [dbl("x", 2)] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(
      d0Flips(),
      [[true, 0], [false, 1_000], [true, 1_000]],
      "its return no earlier than its loss",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache dates the devices of a provider configured again no earlier than their removal when the wall clock stepped back after it (NTP)", async () => {
  const fx = await startProgrammable(BOTH, {
    inProcess: true,
    restart: { backoffMs: [0, 0, 0] },
  });
  try {
    const t = 1_700_000_000_000;
    fx.clock.wallMs = t;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    // A reload removes the provider; then NTP steps the wall clock back a minute.
    const old = fx.host;
    assert.equal(fx.registry.remove("p0"), old);
    await old.stop(1000);
    fx.clock.wallMs = t - 60_000;
    // A reload configures it again.
    const again = fx.registry.add(old.config);
    try {
      await again.start();
      await fx.cache.pollDevice("p0", "d0");
      assert.deepEqual(
        fx.events.flatMap((e) =>
          e.kind === "device_availability" && e.device_id === "d0"
            ? [[e.available, e.timestamp_ms - t, e.reason ?? null]]
            : []
        ),
        [[true, 0, null], [false, 0, "removed"], [true, 0, null]],
        "its return no earlier than its removal",
      );
    } finally {
      await again.stop(1000);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache keeps the removal date of a provider's devices past the wall clock passing it: a second step back (NTP) before the provider is configured again does not date their return before it", async () => {
  const fx = await startProgrammable(BOTH, {
    inProcess: true,
    restart: { backoffMs: [0, 0, 0] },
  });
  const reconcile = (before: ProviderConfig[], next: ProviderConfig[]) =>
    fx.registry.reconcile(before, next, {
      holdRemovals: false,
      stopBudgetMs: 1000,
      stopping: () => false,
    });
  const p0 = fx.host.config;
  const p1 = { ...p0, id: "p1" };
  const p1Changed = { ...p1, timeoutMs: p1.timeoutMs + 1 };
  try {
    const t = 1_700_000_000_000;
    fx.clock.wallMs = t;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    await reconcile([p0], [p0, p1]);
    // A reload removes p0 at t + 1 s; NTP steps the wall clock back a minute, and a reload
    // restarts p1 (its entry changed).
    fx.clock.wallMs = t + 1_000;
    await reconcile([p0, p1], [p1]);
    fx.clock.wallMs = t - 59_000;
    assert.deepEqual((await reconcile([p1], [p1Changed])).restarted, ["p1"]);
    // A minute on, the clock is past the removal again; a reload restarts p1 again.
    fx.clock.wallMs = t + 5_000;
    assert.deepEqual((await reconcile([p1Changed], [p1])).restarted, ["p1"]);
    // NTP steps it back a minute again; a reload configures p0 again.
    fx.clock.wallMs = t - 55_000;
    await reconcile([p1], [p1, p0]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(
      fx.events.flatMap((e) =>
        e.kind === "device_availability" && e.provider_id === "p0" && e.device_id === "d0"
          ? [[e.available, e.timestamp_ms - t, e.reason ?? null]]
          : []
      ),
      [[true, 0, null], [false, 1_000, "removed"], [true, 1_000, null]],
      "its return no earlier than its removal",
    );
  } finally {
    await fx.close();
  }
});
