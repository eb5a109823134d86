/**
 * DiskTier.close() has no bound of its own: it resolves only once the disk answered the last write
 * it holds, and nothing of the tier reaches the disk after it resolves (a row handed in later is
 * dropped and counted) -- the kernel keeps the runtime.data_dir lock until it resolves, so no row
 * lands behind a released lock. Real files under a temporary folder; the appends to it held until
 * the test lets them go (a hung mount).
 */
import assert from "node:assert/strict";
import { systemClock } from "../../src/host/clock.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";
import { tempDir } from "../helpers/kernel.ts";
import { diskTier } from "./_rig.ts";

const T0 = 1_700_000_000_000;
const row = (t: number) => JSON.stringify({ t, p: "p", d: "a", s: { x: [1, 1, 1, 1, 0] } });

Deno.test("DiskTier.close resolves only once the disk answered the write it holds, and no row reaches the disk after it", async () => {
  let hung = false;
  let held = 0;
  let appendsAfterClose = 0;
  let closed = false;
  const released = Promise.withResolvers<void>();
  const files = new InterceptedAppends("/history", async (text, append) => {
    if (closed) appendsAfterClose++;
    if (hung) {
      held++;
      await released.promise;
    }
    await append(text);
  });
  const tier = diskTier({ files, dir: `${tempDir()}/history`, clock: systemClock });
  await tier.open();
  tier.write(row(T0), T0);
  await tier.flush();
  hung = true;
  tier.write(row(T0 + 1000), T0 + 1000);
  let closedAt: "open" | "closed" = "open";
  const closing = tier.close().then(() => (closedAt = "closed"));
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(held > 0, "the last row's write was held by the disk");
  assert.equal(closedAt, "open", "close() resolved while the disk still held its last write");
  assert.equal(tier.rowsPending, 1);
  released.resolve();
  await closing;
  closed = true;
  tier.write(row(T0 + 2000), T0 + 2000); // handed in after the close: dropped, counted
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(appendsAfterClose, 0, "a row reached the disk after close() resolved");
  const s = tier.status();
  assert.equal(s.rowsWritten, 2);
  assert.equal(s.rowsDropped, 1);
  assert.equal(tier.rowsPending, 0);
});
