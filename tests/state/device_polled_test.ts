/**
 * StateCache.onDevicePolled (the hook alarms and interlocks are evaluated on): told after every
 * poll of a device, answered or failed, with the cache's own state object and the samples already
 * stored; a listener that throws never stops polling or the other listeners, and is logged at a
 * bounded rate.
 */
import assert from "node:assert/strict";
import { StatusCode } from "../../src/adpp/mod.ts";
import { DATA_FAULT_LOG_LINES } from "../../src/state/mod.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";

Deno.test("StateCache.onDevicePolled tells every poll, answered or failed, after its samples are stored", async () => {
  const fx = await startProgrammable({
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
  }, { inProcess: true });
  try {
    const seen: string[] = [];
    const off = fx.cache.onDevicePolled((dev) => {
      assert.equal(dev, fx.cache.device("p0", "d0"), "the cache's own object");
      const s = dev.signals.get("x");
      seen.push(
        `${dev.deviceId} ${dev.available} ${
          s?.value?.type === "double" && s.value.double
        } ${s?.quality}`,
      );
    });
    await fx.cache.pollDevice("p0", "d0");
    await fx.cache.pollDevice("p0", "d0"); // unchanged: told all the same
    await fx.program("d0", { read: { error: { code: StatusCode.INTERNAL } } });
    await fx.cache.pollDevice("p0", "d0");
    off();
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(seen, ["d0 true 1 OK", "d0 true 1 OK", "d0 false 1 UNAVAILABLE"]);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache keeps polling and telling other listeners when one throws, and logs it at a bounded rate", async () => {
  const fx = await startProgrammable({
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
  }, { inProcess: true });
  try {
    fx.cache.onDevicePolled(() => {
      throw new Error("listener broke");
    });
    let told = 0;
    fx.cache.onDevicePolled(() => told++);
    const polls = DATA_FAULT_LOG_LINES + 3;
    for (let i = 0; i < polls; i++) {
      await fx.program("d0", { read: { values: [dbl("x", i)] } });
      await fx.cache.pollDevice("p0", "d0");
    }
    assert.equal(told, polls);
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, {
      type: "double",
      double: polls - 1,
    });
    const logged = fx.lines.filter((l) => l.includes("device poll listener failed"));
    assert.equal(logged.length, DATA_FAULT_LOG_LINES);
    assert.match(logged[0]!, /^WARN .*device poll listener failed for "p0\/d0": listener broke$/);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache.onDevicePolled: a listener that unsubscribes or subscribes another while told changes nothing of that poll's telling", async () => {
  const fx = await startProgrammable({
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
  }, { inProcess: true });
  try {
    const seen: string[] = [];
    const once = fx.cache.onDevicePolled(() => {
      seen.push("once");
      once(); // told once, then gone
      fx.cache.onDevicePolled(() => seen.push("late"));
    });
    fx.cache.onDevicePolled(() => seen.push("next"));
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(
      seen,
      ["once", "next"],
      "the next listener is told; the late one from the next poll",
    );
    seen.length = 0;
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(seen, ["next", "late"]);
  } finally {
    await fx.close();
  }
});
