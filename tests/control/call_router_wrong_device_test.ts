/**
 * A provider that answers a Call to one device with another device's id (a provider that mixed
 * its devices up), run as a real child process (tests/providers/_misbehaving_provider.ts): the
 * call is not reported done on the device it was made to, nor are its results that device's.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { PROVIDER_TEXT_CHARS, QUOTED_DEVICE_ID_CHARS, RuntimeError } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { startMisbehaving } from "../providers/misbehaving_provider.ts";

/** A router over the misbehaving provider's registry and cache, on the system clock. */
function routerOf(f: Awaited<ReturnType<typeof startMisbehaving>>): CallRouter {
  return new CallRouter({
    registry: f.registry,
    cache: f.cache,
    log: testLogger(),
    clock: systemClock,
  });
}

Deno.test("CallRouter fails a call the provider answers for another device, naming both", async () => {
  const f = await startMisbehaving({
    devices: { a: { relay: true }, b: { relay: false } },
    answerCallAs: { a: "b" },
  });
  try {
    const router = routerOf(f);
    // b answers for itself: done.
    const b = await router.call({
      providerId: "p0",
      deviceId: "b",
      functionId: 1,
      args: {},
      origin: "safety",
    });
    assert.deepEqual(b.results, { done_by: { type: "string", string: "b" } });
    // a's call was answered by b: not a's success, and b's results are not a's.
    await assert.rejects(
      () =>
        router.call({ providerId: "p0", deviceId: "a", functionId: 1, args: {}, origin: "safety" }),
      (err: unknown) => {
        assert.ok(err instanceof RuntimeError, String(err));
        assert.equal(err.code, "INTERNAL");
        assert.match(err.message, /"a"/);
        assert.match(err.message, /"b"/);
        return true;
      },
    );
  } finally {
    await f.close();
  }
});

Deno.test("CallRouter names a 10 kB function and 10 kB device ids cut and quoted when another device answers", async () => {
  const asked = "a".repeat(10_000);
  const other = `b"${"b".repeat(10_000)}`;
  const fn = `f"${"F".repeat(10_000)}`;
  const f = await startMisbehaving({
    devices: { [asked]: { relay: true }, [other]: { relay: false } },
    answerCallAs: { [asked]: other },
    functionName: fn,
  });
  try {
    const router = routerOf(f);
    const cutId = (id: string) => `${id.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
    const device = `p0/${cutId(asked)}`;
    await assert.rejects(
      () =>
        router.call({
          providerId: "p0",
          deviceId: asked,
          functionId: 1,
          args: {},
          origin: "safety",
        }),
      (err: unknown) => {
        assert.ok(err instanceof RuntimeError, String(err));
        assert.equal(err.code, "INTERNAL");
        assert.equal(
          err.message,
          `provider answered the call of ${device} ${
            JSON.stringify(`${fn.slice(0, PROVIDER_TEXT_CHARS)}\u2026`)
          } for device ${JSON.stringify(cutId(other))}, not ${JSON.stringify(cutId(asked))}: ` +
            `whether ${device} acted is unknown`,
        );
        return true;
      },
    );
  } finally {
    await f.close();
  }
});
