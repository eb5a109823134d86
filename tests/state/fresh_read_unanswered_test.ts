/**
 * Which fresh reads (StateCache.readFresh: the e-stop's read-back) say their device did not answer
 * (onFreshReadFailed, a device return at its next answered poll: DeviceOutages): one its provider
 * answered with an error status (DEADLINE_EXCEEDED here), and one that got no answer within the
 * provider's whole timeout_ms, as a call that timed out does -- not one the caller's shorter bound
 * (verify_timeout_ms) cut: that says nothing of the device yet (its request runs on to timeout_ms:
 * fresh_read_cut_left_running_test.ts). The programmable provider as a real child process (it
 * answers requests concurrently), nothing polling.
 */
import assert from "node:assert/strict";
import { StatusCode } from "../../src/adpp/mod.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";

/**
 * The provider's timeout_ms: how long a hung read given all of it lasts (its program calls have
 * this bound too: 2000 ms, as tests/state/hung_sibling_poll_test.ts found 1000 ms short in CI).
 */
const TIMEOUT_MS = 2000;
/** A read-back's bound shorter than TIMEOUT_MS (the verification's own deadline near). */
const CUT_MS = 200;

async function withDevice(
  run: (
    fx: Awaited<ReturnType<typeof startProgrammable>>,
    told: string[],
  ) => Promise<void>,
): Promise<void> {
  const fx = await startProgrammable({
    devices: { a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
  }, { timeoutMs: TIMEOUT_MS });
  const told: string[] = [];
  fx.cache.onFreshReadFailed((p, d) => told.push(`${p}/${d}`));
  try {
    await run(fx, told);
  } finally {
    await fx.close();
  }
}

Deno.test("StateCache.readFresh: a read that got no answer within its provider's whole timeout_ms says its device did not answer", async () => {
  await withDevice(async (fx, told) => {
    await fx.program("a", { read: { hang: true } });
    // The caller's bound past the provider's: the read is given its timeout_ms.
    const read = await fx.cache.readFresh("p0", "a", ["x"], TIMEOUT_MS * 10);
    assert.equal(read.ok, false);
    assert.equal(!read.ok && read.timedOut, true, JSON.stringify(read));
    // Before: [] -- only a read its provider answered with an error status was told.
    assert.deepEqual(told, ["p0/a"]);
  });
});

Deno.test("StateCache.readFresh: a read the caller's shorter bound cut says nothing of its device at that bound; one its provider answered DEADLINE_EXCEEDED does", async () => {
  await withDevice(async (fx, told) => {
    await fx.program("a", { read: { hang: true } });
    const cut = await fx.cache.readFresh("p0", "a", ["x"], CUT_MS);
    assert.equal(!cut.ok && cut.timedOut, true, JSON.stringify(cut));
    assert.deepEqual(told, [], "a read cut short by its caller is no outage of the device");
    await fx.program("a", {
      read: { error: { code: StatusCode.DEADLINE_EXCEEDED, message: "bus timeout" } },
    });
    const answered = await fx.cache.readFresh("p0", "a", ["x"], CUT_MS * 10);
    assert.equal(answered.ok, false);
    assert.deepEqual(told, ["p0/a"]);
  });
});
