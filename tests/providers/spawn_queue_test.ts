/**
 * SpawnQueue: provider spawns (synchronous in Deno) run one per event-loop turn, FIFO, never in the
 * caller's turn, so a restart storm leaves the loop free for I/O between spawns (an e-stop must
 * latch at once however many providers restart; the latency figure is bench/estop_storm.ts's). And
 * the registry's hosts, those of the configuration and those a reload adds, spawn through its one
 * queue.
 */
import assert from "node:assert/strict";
import { RuntimeError, type SpawnOptions } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { MAX_QUEUED_SPAWNS, ProviderRegistry, SpawnQueue } from "../../src/providers/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { plantProvider } from "../safety/_fixture.ts";
import { macrotask } from "../helpers/turns.ts";

Deno.test("SpawnQueue runs spawns in order, never in the caller's turn, one per turn with I/O between", async () => {
  const q = new SpawnQueue(systemClock);
  const ran: string[] = [];
  const runs = ["a", "b", "c"].map((name) =>
    q.run(() => {
      ran.push(name);
      // A timer queued by a spawn fires before the next spawn: the loop turns in between.
      if (name === "a") setTimeout(() => ran.push("turn after a"), 0);
      return name;
    })
  );
  assert.equal(q.queued, 3);
  await Promise.resolve();
  assert.deepEqual(ran, [], "not in the caller's turn, not in its microtasks");
  assert.deepEqual(await Promise.all(runs), ["a", "b", "c"]);
  assert.deepEqual(ran, ["a", "turn after a", "b", "c"]);
  assert.equal(q.queued, 0);
});

Deno.test("SpawnQueue rejects a start beyond its bound with UNAVAILABLE; a spawn that throws fails only its own run", async () => {
  assert.equal(MAX_QUEUED_SPAWNS, 1024);
  const q = new SpawnQueue(systemClock, { maxQueued: 2 });
  const first = q.run(() => {
    throw new Error("spawn failed");
  });
  const second = q.run(() => "second");
  await assert.rejects(q.run(() => "third"), (e: RuntimeError) => {
    assert.equal(e.code, "UNAVAILABLE");
    assert.equal(e.message, "spawn queue full: 2 provider starts are waiting");
    return true;
  });
  await assert.rejects(first, /spawn failed/);
  assert.equal(await second, "second");
  // Room again once they ran.
  assert.equal(await q.run(() => "fourth"), "fourth");
});

Deno.test("ProviderRegistry hosts spawn through one queue, also a host a reload adds; a host stopped while waiting spawns nothing", async () => {
  const spawned: string[] = [];
  const registry = new ProviderRegistry([plantProvider("a"), plantProvider("b")], {
    spawn: (o: SpawnOptions) => {
      spawned.push(o.args.at(-1) === "c-marker" ? "c" : String(spawned.length));
      throw new Error("no process in this test");
    },
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: ".",
    shutdownTimeoutMs: 100,
  });
  const c = registry.add({ ...plantProvider("c"), args: ["c-marker"] });
  const starts = [...registry.hosts.map((h) => h.start().catch((e) => e))];
  await Promise.resolve();
  assert.deepEqual(spawned, [], "no start spawns in its caller's turn");
  await macrotask();
  assert.equal(spawned.length, 1, "one spawn per turn");
  const failures = await Promise.all(starts);
  assert.deepEqual(spawned, ["0", "1", "c"]);
  for (const f of failures) {
    assert.ok(f instanceof RuntimeError && f.code === "UNAVAILABLE", String(f));
  }

  // Stopped before its turn came: nothing is spawned, the start fails as the runtime stopping.
  const late = c.start().catch((e) => e);
  await c.stop(100);
  const err = await late;
  assert.ok(err instanceof RuntimeError, String(err));
  assert.match(err.message, /runtime is stopping/);
  assert.equal(spawned.length, 3);
});
