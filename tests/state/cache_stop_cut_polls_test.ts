/**
 * StateCache.abandonPolls: a stop that goes on without the polls still in flight (the runtime's
 * "state cache" stage past CACHE_STOP_POLLS_MS) takes nothing they end with, however late: no
 * sample stored, no device marked UNAVAILABLE, no event published, no poll listener told -- the
 * journals, the history and telemetry those feed may be closed by then, the runtime stopped.
 * Before, the late answer was stored and published like any other. The child process of the
 * programmable provider (requests answered concurrently), whose read the test delays.
 */
import assert from "node:assert/strict";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";
import { waitFor } from "../helpers/kernel.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] },
  },
};

/** How late the poll in flight ends: well after the stop went on without it. */
const LATE_MS = 300;

for (
  const [what, read] of [
    ["answers", { values: [dbl("temp", 99)], delayMs: LATE_MS }],
    ["fails", { error: { code: 13, message: "sensor bus reset" }, delayMs: LATE_MS }],
  ] as const
) {
  Deno.test(`StateCache.abandonPolls names the provider whose poll is in flight and takes nothing of it when it ${what} late`, async () => {
    const fx = await startProgrammable(INVENTORY, { poll: true, intervalMs: 50 });
    try {
      assert.deepEqual(fx.cache.signal("p0", "probe", "temp")?.value, {
        type: "double",
        double: 25,
      });
      // The reads before the program took effect (counted by the provider as it took it: a read
      // counted by a later look may be a programmed one already -- CI saw the first programmed
      // read end, failed, and the device marked by it, before the test took the second for it).
      const sent = await fx.program("probe", { read });
      // The first programmed read is in the provider's hands, answered LATE_MS after it came.
      await waitFor("a poll in flight", async () => (await fx.stats("probe")).reads > sent);
      // Read now: a poll of the old answer may have ended after the program (50 ms polls); none
      // ends from here until the late one (the device's read is in flight).
      const before = fx.cache.signal("p0", "probe", "temp");
      fx.events.length = 0;
      let told = 0;
      const off = fx.cache.onDevicePolled(() => told++);
      const stopping = fx.cache.stop();
      assert.deepEqual(fx.cache.abandonPolls(), ["p0"], "the provider whose poll is in flight");
      await stopping; // the late outcome has come (the pass ended with it)
      off();
      assert.deepEqual(fx.events.map((e) => e.kind), [], "nothing published of the late poll");
      assert.equal(told, 0, "no poll listener told");
      assert.deepEqual(fx.cache.signal("p0", "probe", "temp"), before, "the signal kept as it was");
      assert.equal(fx.cache.device("p0", "probe")?.available, true, "the device not marked");
    } finally {
      await fx.close();
    }
  });
}

Deno.test("StateCache.abandonPolls with no poll in flight names none, and start() takes answers again", async () => {
  const fx = await startProgrammable(INVENTORY, { poll: true, intervalMs: 60_000 });
  try {
    await fx.cache.stop();
    assert.deepEqual(fx.cache.abandonPolls(), [], "no loop cycling");
    await fx.program("probe", { read: { values: [dbl("temp", 30)] } });
    await fx.cache.start(); // its priming pass is taken again
    assert.deepEqual(fx.cache.signal("p0", "probe", "temp")?.value, {
      type: "double",
      double: 30,
    });
  } finally {
    await fx.close();
  }
});
