/**
 * A device whose `anolis.claim` tag is as long as one ADPP frame allows (some 200,000 keys), from
 * a real provider child (tests/helpers/programmable_provider.ts): start-up's claim check and
 * GET /v0/providers/health's `claims` read it on the event loop, which every provider's polls and
 * the e-stop share. Before, the keys were made distinct by scanning those read so far: each read
 * of this tag took about 30 s. docs/http-api.md, "Resource claims".
 */
import assert from "node:assert/strict";
import { MAX_FRAME_BYTES } from "../../src/adpp/mod.ts";
import { providerHealthViews } from "../../src/state/mod.ts";
import { startProgrammable } from "../helpers/programmable_provider.ts";

/** Distinct keys (base-36 numbers) filling a DescribeDevice answer, with room for the rest of it. */
function frameOfKeys(): string[] {
  const keys: string[] = [];
  for (let i = 0, length = 0; length < MAX_FRAME_BYTES - 4096; i++) {
    const k = i.toString(36);
    keys.push(k);
    length += k.length + 1;
  }
  return keys;
}

Deno.test("a provider's device claiming a frame of keys starts, and its health answers, without stalling the runtime", async () => {
  const keys = frameOfKeys();
  // No timed assertion (speed is measured by hand and in bench/, never asserted): before the fix
  // this start-up took 112 s and the health view some 30 s, after it 0.46 s.
  const fx = await startProgrammable({
    devices: { d0: { signals: [], tags: { "anolis.claim": keys.join(" ") } } },
  }, { poll: false });
  try {
    const [view] = providerHealthViews(fx.registry, fx.cache, {
      pollingIntervalMs: 500,
      staleness: { warnAfterMs: 0, staleAfterMs: 0 },
      nowMono: performance.now(),
    });
    const d0 = view!.devices.find((d) => d.device_id === "d0")!;
    assert.equal(d0.claims.length, keys.length);
    assert.equal(d0.claims.at(-1), keys.at(-1));
  } finally {
    await fx.close();
  }
});
