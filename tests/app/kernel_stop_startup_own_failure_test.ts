/**
 * A start-up whose provider failed on its own before the stop was asked (its Hello refused), while
 * another provider's start still held start-up (its Hello unanswered: startAll waits for every
 * start, to name every failure), then stopped: the refusal is the start's own failure
 * (Kernel.startFailedOnItsOwn, said by runService as the process exits), not lost behind the
 * stop's end of the other. Real kernel, real children.
 */
import assert from "node:assert/strict";
import { errorMessage } from "../../src/common/mod.ts";
import { newKernel, tempDir, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";

Deno.test("a start-up whose provider's Hello was refused before the stop, another's Hello still held, names that refusal as its own failure", async () => {
  const dir = tempDir("startup-own-failure-");
  const devices = { d0: { signals: [{ id: "v", type: T.DOUBLE }] } };
  await Deno.writeTextFile(
    `${dir}/refused.json`,
    JSON.stringify({ hello: { protocol: "0.0-other" }, devices }),
  );
  await Deno.writeTextFile(`${dir}/held.json`, JSON.stringify({ hello: { hang: true }, devices }));
  const rt = newKernel(
    testConfig({
      providers: [
        programmableProvider("refused", `${dir}/refused.json`),
        programmableProvider("held", `${dir}/held.json`),
      ],
    }),
  );
  const starting = rt.start().then(() => null, (err: unknown) => err);
  let stopped: Promise<void> | null = null;
  try {
    // refused's start has failed (its process ended); held's holds start-up, its Hello unanswered.
    await waitFor(
      "refused's start failed",
      () => rt.registry.host("refused")?.startError != null,
      10000,
      0,
    );
    assert.equal(rt.registry.host("held")?.available, false);
    stopped = rt.stop();
    const err = await starting;
    await stopped;
    assert.ok(err !== null, "start-up did not fail");
    // Before: null, the refusal said nowhere (the stop ended held's start: "the stop's end").
    const own = rt.startFailedOnItsOwn;
    assert.ok(own !== null, `no failure of its own named; start() rejected: ${errorMessage(err)}`);
    assert.match(errorMessage(own.error), /refused: .*provider speaks protocol '0\.0-other'/);
    // The stop's end of held's start is not said as a failure of its own.
    assert.doesNotMatch(errorMessage(own.error), /held:/);
  } finally {
    await (stopped ?? rt.stop());
  }
});
