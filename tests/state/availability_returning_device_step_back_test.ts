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
import { failedStartText } from "../../src/providers/mod.ts";

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
      startBudgetMs: 30_000,
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

Deno.test("StateCache keeps the removal date of a provider's devices through reloads that could not register it: its return after a step back (NTP) is dated no earlier, and a drop leaves no device behind", async () => {
  const fx = await startProgrammable(BOTH, {
    inProcess: true,
    restart: { backoffMs: [0, 0, 0] },
  });
  const reconcile = (before: ProviderConfig[], next: ProviderConfig[]) =>
    fx.registry.reconcile(before, next, {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
  // A host listener after the cache's that fails refuses p0's registration (the cache took its
  // host up, then has it taken out again).
  let refuse = false;
  fx.registry.eachHost((host) => {
    if (refuse && host.id === "p0") throw new Error("listener broke");
  });
  const p0 = fx.host.config;
  const p0Changed = { ...p0, timeoutMs: p0.timeoutMs + 1 };
  const t = 1_700_000_000_000;
  const d0Flips = () =>
    fx.events.flatMap((e) =>
      e.kind === "device_availability" && e.provider_id === "p0" && e.device_id === "d0"
        ? [[e.available, e.timestamp_ms - t, e.reason ?? null]]
        : []
    );
  try {
    fx.clock.wallMs = t;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    // A reload at t + 1 s restarts p0 (its entry changed); its successor is not registered.
    refuse = true;
    fx.clock.wallMs = t + 1_000;
    const first = await reconcile([p0], [p0Changed]);
    assert.match(first.failed.map(failedStartText).join(), /^p0: Provider p0 not registered/);
    // NTP steps the wall clock back a minute; a reload of the same file fails the same way.
    fx.clock.wallMs = t - 60_000;
    const second = await reconcile(first.effective, [p0Changed]);
    assert.match(second.failed.map(failedStartText).join(), /^p0: Provider p0 not registered/);
    // A reload registers it: d0 comes back, dated no earlier than its removal.
    refuse = false;
    const third = await reconcile(second.effective, [p0Changed]);
    assert.deepEqual(third.added, ["p0"]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(
      d0Flips(),
      [[true, 0, null], [false, 1_000, "removed"], [true, 1_000, null]],
      "its return no earlier than its removal",
    );

    // Not registered again at t + 2 s, then a reload drops p0 from the file: nothing of it stays.
    refuse = true;
    fx.clock.wallMs = t + 2_000;
    const fourth = await reconcile(third.effective, [p0]);
    assert.match(fourth.failed.map(failedStartText).join(), /^p0: Provider p0 not registered/);
    await reconcile(fourth.effective, []);
    assert.equal(fx.registry.configured("p0"), false);
    assert.deepEqual(fx.cache.providerDevices("p0"), []);
    assert.equal(fx.cache.device("p0", "d0"), undefined);
    // Configured again after another step back: its devices' return follows their last removal.
    refuse = false;
    fx.clock.wallMs = t - 30_000;
    assert.deepEqual((await reconcile([], [p0])).added, ["p0"]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(
      d0Flips().slice(3),
      [[false, 2_000, "removed"], [true, 2_000, null]],
      "its return no earlier than its last removal",
    );
  } finally {
    await fx.close();
  }
});
