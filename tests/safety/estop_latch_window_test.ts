/**
 * Between the latch and the ladder (Estop.trigger): whatever throws there -- a caller's
 * `onLatched`, an event bus port -- the latch never stays on without its safe-state ladder.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop, type EstopOptions } from "../../src/safety/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, plantProvider } from "./_fixture.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";

async function ladderRunsDespite(
  name: string,
  inject: {
    onLatched?: () => void;
    bus?: EstopOptions["bus"];
    audit?: EstopOptions["audit"];
  },
): Promise<void> {
  await using r = await rig({ providers: [plantProvider("plant")], pollingIntervalMs: 60000 });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    ...(inject.bus ? { bus: inject.bus } : {}),
    ...(inject.audit ? { audit: inject.audit } : {}),
    safeState: {
      setpoints: [],
      hooks: [call("plant/plant0", "set_heater", { enabled: false })],
      zeroIsSafe: false,
      expect: [],
      verifyTimeoutMs: 100,
    },
  });
  const outcome = await estop.trigger(
    name,
    inject.onLatched ? { onLatched: inject.onLatched } : {},
  ).then(
    (result) => `answered: ${result.actions.length} action(s)`,
    (err: Error) => `rejected: ${err.message}`,
  );
  assert.equal(estop.latched, true);
  assert.equal(
    r.provider<FakeProvider>("plant").count("call"),
    1,
    `latched without its ladder when ${name} threw (${outcome})`,
  );
  assert.equal(outcome, "answered: 1 action(s)");
}

Deno.test("Estop: an onLatched that throws still leaves the latch with its ladder run", async () => {
  await ladderRunsDespite("onLatched", {
    onLatched: () => {
      throw new Error("onLatched broke");
    },
  });
});

Deno.test("Estop: an event bus that throws on estop_change still leaves the latch with its ladder run", async () => {
  await ladderRunsDespite("the bus", {
    bus: {
      publish: (e: { kind: string }) => {
        if (e.kind === "estop_change") throw new Error("bus broke");
        return 0;
      },
    } as unknown as EstopOptions["bus"],
  });
});

Deno.test("Estop: an audit that throws on the latch neither skips the change's announcement nor the ladder", async () => {
  const published: string[] = [];
  await ladderRunsDespite("the audit", {
    audit: {
      record: () => {
        throw new Error("audit broke");
      },
    } as unknown as EstopOptions["audit"],
    bus: {
      publish: (e: { kind: string }) => {
        published.push(e.kind);
        return 0;
      },
    } as unknown as EstopOptions["bus"],
  });
  assert.ok(
    published.includes("estop_change"),
    `estop_change published after the audit threw (published: ${published.join(", ")})`,
  );
});
