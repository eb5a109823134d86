/**
 * The rings of devices the cache no longer has (a reload removed their provider, rediscovery their
 * device) are let go once all they hold is older than memory_seconds: their bytes go back to the
 * shared budget and their open bucket to the disk tier. A device whose provider is down is still
 * the cache's, and its last minutes stay. A real History fed by hand, as the cache feeds it.
 */
import assert from "node:assert/strict";
import { HISTORY_SWEEP_EVERY_MS } from "../../src/history/mod.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { TestClock } from "../helpers/programmable_provider.ts";

const MEMORY_S = 60;

const rig = () => handFedHistory({ memorySeconds: MEMORY_S });

Deno.test("a removed device's ring is let go once it is older than memory_seconds; a down provider's stays", async () => {
  const { clock, history, known, poll, files } = rig();
  await history.start();
  // Three devices, each polled with a new value every second for 30 s.
  for (let i = 0; i < 30; i++) {
    poll("keep", "d", i);
    poll("gone", "d", i);
    poll("down", "d", i);
    clock.wall += 1000;
  }
  const full = history.status();
  assert.equal(full.devices, 3);
  // A reload removes provider `gone`; provider `down` stops answering but is still the cache's.
  known.delete("gone/d");
  // Within memory_seconds of its last poll the removed device's samples are still there.
  for (let i = 0; i < MEMORY_S - 5; i++) {
    poll("keep", "d", 100 + i);
    clock.wall += 1000;
  }
  assert.equal(history.status().devices, 3);
  assert.ok(history.knows("gone", "d"));
  // Past memory_seconds (and the next sweep): let go, and its bytes freed.
  const before = history.status().memoryBytes;
  for (let i = 0; i < 5 + HISTORY_SWEEP_EVERY_MS / 1000; i++) {
    poll("keep", "d", 200 + i);
    clock.wall += 1000;
  }
  const after = history.status();
  assert.equal(after.devices, 2);
  assert.equal(history.knows("gone", "d"), false);
  assert.ok(history.knows("down", "d"), "the down provider's device keeps its last minutes");
  assert.ok(
    after.memoryBytes < before,
    `bytes back in the budget (${before} -> ${after.memoryBytes})`,
  );
  await history.stop();
  // The removed device's last bucket (its polls 20..29 s) went to the disk tier with it (stop()
  // writes the open buckets of the devices the history still holds, no longer this one).
  const rows = (await Promise.all(
    (await files.listNames("/data/history")).map((n) => files.text(`/data/history/${n}`)),
  )).join("").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
  const last = rows.filter((r) => r.p === "gone").at(-1);
  assert.deepEqual(last?.s.x.slice(0, 4), [20, 29, 29, 10], JSON.stringify(last));
});

Deno.test("a reload that removes a provider lets go of its devices' rings once they are past memory_seconds", async () => {
  const clock = new TestClock();
  const config = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    history: { memorySeconds: 10 },
  });
  const rt = await startRuntime(config, { host: { clock } });
  try {
    const history = rt.history!;
    await waitFor("both providers' devices in the ring", () => history.knows("sim1", "relayio0"));
    const both = history.status().devices;
    await rt.reload({ ...config, providers: [config.providers[0]!] });
    // Time passes on the wall clock a second at a time (a jump of more than WALL_STEP_MS would
    // be a step of the clock, which makes nothing older: "a wall clock stepped forward ..." below).
    const pass = async (seconds: number) => {
      for (let i = 0; i < seconds; i++) {
        clock.wallMs += 1_000;
        await rt.cache.pollDevice("sim0", "relayio0");
      }
    };
    // Removed, but what the ring holds of it is not yet older than memory_seconds: kept.
    await pass(5);
    assert.ok(history.knows("sim1", "relayio0"));
    assert.equal(history.status().devices, both);
    // Past memory_seconds, at the next sweep (every 10 s: at 10 s it was not yet past): let go.
    await pass(16);
    assert.equal(history.knows("sim1", "relayio0"), false);
    assert.ok(history.knows("sim0", "relayio0"));
    assert.equal(history.status().devices, both / 2, "sim0's devices stay");
  } finally {
    await rt.stop();
  }
});

Deno.test("a wall clock stepped forward does not let go of a removed device's ring before memory_seconds have really passed", async () => {
  const { clock, history, known, poll } = rig();
  await history.start();
  for (let i = 0; i < 30; i++) {
    poll("keep", "d", i);
    poll("gone", "d", i);
    clock.wall += 1000;
    clock.mono += 1000;
  }
  known.delete("gone/d"); // a reload removed its provider
  // The first NTP synchronisation of a board without a real-time clock: an hour ahead at once.
  clock.wall += 3_600_000;
  for (let i = 0; i < HISTORY_SWEEP_EVERY_MS / 1000 + 1; i++) {
    poll("keep", "d", 100 + i);
    clock.wall += 1000;
    clock.mono += 1000;
  }
  assert.ok(
    history.knows("gone", "d"),
    "its polls are seconds old on the monotonic clock: kept, as the rings keep theirs",
  );
  assert.ok(history.knows("keep", "d"));
  // Once memory_seconds have really passed since its last poll (and the next sweep): let go.
  for (let i = 0; i < MEMORY_S + HISTORY_SWEEP_EVERY_MS / 1000; i++) {
    poll("keep", "d", 200 + i);
    clock.wall += 1000;
    clock.mono += 1000;
  }
  assert.equal(history.knows("gone", "d"), false);
  await history.stop();
});

Deno.test("a wall clock stepped back lets go of a removed device's ring once memory_seconds have really passed", async () => {
  const { clock, history, known, poll } = rig();
  await history.start();
  const pass = (seconds: number, from: number) => {
    for (let i = 0; i < seconds; i++) {
      poll("keep", "d", from + i);
      clock.wall += 1000;
      clock.mono += 1000;
    }
  };
  for (let i = 0; i < 30; i++) poll("gone", "d", i), pass(1, i);
  known.delete("gone/d"); // a reload removed its provider
  // An NTP correction (or an operator) sets the wall clock back an hour: the removed device's
  // last polls now lie ahead of it, so by their times alone it would be kept another hour.
  clock.wall -= 3_600_000;
  pass(HISTORY_SWEEP_EVERY_MS / 1000 + 1, 100);
  assert.ok(history.knows("gone", "d"), "its polls are seconds old on the monotonic clock: kept");
  // Once memory_seconds have really passed since its last poll (and the next sweep): let go, as
  // the polled rings let go of their polls from before the step.
  pass(MEMORY_S + HISTORY_SWEEP_EVERY_MS / 1000, 200);
  assert.equal(history.knows("gone", "d"), false);
  assert.ok(history.knows("keep", "d"));
  await history.stop();
});
