/**
 * A provider that answers a ReadSignals of one device with another device's id and values (a
 * provider that mixed its devices up), run as a real child process
 * (tests/providers/_misbehaving_provider.ts): neither the poll nor the e-stop's read-back may
 * attribute those values to the device that was asked about.
 */
import assert from "node:assert/strict";
import { verifySafeState } from "../../src/safety/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { QUOTED_DEVICE_ID_CHARS } from "../../src/common/mod.ts";
import { type MisbehaviourPlan, startMisbehaving } from "../providers/misbehaving_provider.ts";

/** Device `a` is unsafe (relay on, speed 500); `b` is safe. Reads of `a` are answered as `b`. */
const PLAN: MisbehaviourPlan = {
  devices: { a: { relay: true, speed: 500 }, b: { relay: false, speed: 0 } },
  answerReadAs: { a: "b" },
};

Deno.test("StateCache does not store another device's answer as the values of the device polled", async () => {
  const f = await startMisbehaving(PLAN);
  try {
    await f.cache.pollDevice("p0", "b");
    await f.cache.pollDevice("p0", "a");
    // b answered for itself: stored.
    assert.deepEqual(f.cache.signal("p0", "b", "relay")?.value, { type: "bool", bool: false });
    // a's read was answered by b: nothing of it is a's.
    const relay = f.cache.signal("p0", "a", "relay");
    const speed = f.cache.signal("p0", "a", "speed");
    assert.deepEqual(relay?.value ?? null, null);
    assert.deepEqual(speed?.value ?? null, null);
    assert.ok(relay?.quality !== "OK", `a/relay is ${relay?.quality}`);
    assert.ok(
      f.lines.some((l) => l.includes('"a"') && l.includes('"b"') && l.startsWith("WARN")),
      `no warning naming both devices:\n${f.lines.join("\n")}`,
    );
  } finally {
    await f.close();
  }
});

Deno.test("StateCache.readFresh refuses an answer for another device (the e-stop read-back)", async () => {
  const f = await startMisbehaving(PLAN);
  try {
    const read = await f.cache.readFresh("p0", "a", ["relay", "speed"], 2000);
    assert.deepEqual(read.ok, false);
    if (!read.ok) {
      assert.match(read.reason, /"a"/);
      assert.match(read.reason, /"b"/);
    }
    // The device that answers for itself still reads.
    const b = await f.cache.readFresh("p0", "b", ["relay"], 2000);
    assert.deepEqual(b.ok, true);
  } finally {
    await f.close();
  }
});

Deno.test("verifySafeState does not verify a device by another device's values", async () => {
  const f = await startMisbehaving(PLAN);
  try {
    const expect = [
      { signal: "p0/a/relay", providerId: "p0", deviceId: "a", signalId: "relay", equals: false },
      { signal: "p0/a/speed", providerId: "p0", deviceId: "a", signalId: "speed", max: 1 },
    ].map((e, i) => ({ ...e, path: `safety.safe_state.expect[${i}]` }));
    const v = await verifySafeState({ reads: f.cache, clock: systemClock, expect, timeoutMs: 200 });
    assert.deepEqual(v.outcome, "unreachable");
    assert.deepEqual(v.checks.map((c) => c.outcome), ["unreachable", "unreachable"]);
  } finally {
    await f.close();
  }
});

Deno.test("StateCache quotes another device's 10 KB id cut to QUOTED_DEVICE_ID_CHARS in its warning and in a fresh read's reason", async () => {
  const long = `${"x".repeat(10_000)}"`; // a quote at the end: never reaches the line
  const f = await startMisbehaving({
    devices: { a: { relay: true } },
    answerReadAs: { a: long },
  });
  try {
    const cut = JSON.stringify(`${"x".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026`);
    await f.cache.pollDevice("p0", "a");
    const warns = f.lines.filter((l) => l.startsWith("WARN") && l.includes("ReadSignals"));
    assert.equal(warns.length, 1, f.lines.join("\n"));
    assert.ok(warns[0]!.includes(`of device "a" for device ${cut}`), warns[0]);
    assert.ok(warns[0]!.length < 400, `a line of ${warns[0]!.length} characters`);
    const read = await f.cache.readFresh("p0", "a", ["relay"], 2000);
    assert.equal(read.ok, false);
    if (!read.ok) assert.ok(read.reason.includes(`for device ${cut}`), read.reason);
  } finally {
    await f.close();
  }
});
