/**
 * The signals of devices a rediscovery leaves out (a restart whose discovery lists them no more)
 * are kept for their return, at most DEPARTED_SIGNALS_DEVICES devices per provider, the one left
 * out longest ago let go of first; so are those a reload's removal keeps for the provider
 * configured again under the id (#removedSignals). A device kept returns with its signals as they
 * were (UNAVAILABLE since the crash: its first answer is a quality change); one let go of returns
 * with none. The programmable provider in-process, restarted by its supervisor: its inventory
 * read from a file at each start.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";
import { DEPARTED_SIGNALS_DEVICES } from "../../src/state/mod.ts";
import { MAX_DEVICES_PER_PROVIDER } from "../../src/adpp/client.ts";
import type { ProviderHost } from "../../src/providers/mod.ts";

const DEVICE = { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] };

/** An inventory listing `ids`, each with one polled signal answered OK. */
function listing(ids: readonly string[]): Inventory {
  return { devices: Object.fromEntries(ids.map((id) => [id, DEVICE])) };
}

Deno.test("the signals of devices a rediscovery left out, and a reload's removal kept, are bounded by DEPARTED_SIGNALS_DEVICES, the oldest let go of first", async () => {
  // As many devices as the bound in one listing: the one more to go past it leaves later.
  assert.ok(DEPARTED_SIGNALS_DEVICES <= MAX_DEVICES_PER_PROVIDER);
  const first = Array.from(
    { length: DEPARTED_SIGNALS_DEVICES },
    (_, i) => `a${String(i).padStart(4, "0")}`,
  );
  const fx = await startProgrammable(listing(first), {
    inProcess: true,
    restart: { maxAttempts: 10, backoffMs: [0, 0, 0] },
  });
  try {
    const { cache, registry } = fx;
    const quality = (id: string) => cache.signal("p0", id, "x")?.quality;
    /** The host's process restarts listing `ids` (its devices polled once it is back). */
    const restartListing = async (host: ProviderHost, ids: readonly string[]) => {
      await fx.setInventory(listing(ids));
      const pid = host.session!.pid;
      fx.kill();
      await waitFor(
        `back listing ${ids.join(", ")}`,
        () => host.available && host.session!.pid !== pid && host.devices.length === ids.length,
      );
      for (const id of ids) await cache.pollDevice("p0", id);
    };
    for (const id of first) await cache.pollDevice("p0", id);
    assert.ok(first.every((id) => quality(id) === "OK"));

    // Left out, all of them (as many as the bound), then `b` too: one more than the bound.
    await restartListing(fx.host, ["b"]);
    await restartListing(fx.host, ["c"]);
    // Listed again (not polled yet): the one left out longest ago was let go of, the next kept.
    await fx.setInventory(listing([first[0]!, first[1]!]));
    const pid = fx.host.session!.pid;
    fx.kill();
    await waitFor(
      "back listing a0000, a0001",
      () => fx.host.session?.pid !== pid && fx.host.available,
    );
    assert.equal(quality(first[0]!), undefined, "a0000: let go of (the oldest)");
    assert.equal(quality(first[1]!), "UNAVAILABLE", "a0001: kept");

    // The same bound on what a reload's removal keeps for the provider configured again: the
    // devices left out (a0002..a1023, b, c: as many as the bound), then those listed with signals
    // (a0001): one more than the bound.
    const old = registry.remove("p0")!;
    await old.stop(1000);
    await fx.setInventory(listing([first[2]!, first[3]!]));
    const again = registry.add(old.config);
    try {
      await again.start();
      await waitFor("configured again", () => again.available && again.devices.length === 2);
      assert.equal(quality(first[2]!), undefined, "a0002: let go of (the oldest now)");
      assert.equal(quality(first[3]!), "UNAVAILABLE", "a0003: kept");
    } finally {
      await again.stop(1000);
    }
  } finally {
    await fx.close();
  }
});
