/**
 * AbandonedReloadReads counts the file-system questions reloads left waiting, process-wide, and
 * refuses a question once RELOAD_ABANDONED_READS_MAX wait. Its refusal said "of earlier reloads",
 * but a reload that reaches the bound itself (a tree include that hangs, then the kernel's read
 * of a TLS file in the same SIGHUP) has its own question among them: the text names reloads,
 * whichever they are. A clock moved by hand; questions that never answer.
 */
import assert from "node:assert/strict";
import {
  AbandonedReloadReads,
  RELOAD_ABANDONED_PATHS_NAMED,
  RELOAD_ABANDONED_READS_MAX,
} from "../../src/app/reload_reads.ts";
import { ManualClock } from "../helpers/clock.ts";

/** Asks a question about `path` that never answers and lets it go late (left waiting). */
async function leaveWaiting(
  abandoned: AbandonedReloadReads,
  clock: ManualClock,
  path: string,
): Promise<void> {
  const asked = abandoned.ask(clock, 1, () => path, () => new Promise<never>(() => {}));
  clock.advance(1);
  assert.deepEqual(await asked, { kind: "late" });
}

Deno.test("AbandonedReloadReads refuses the question after the one that reached RELOAD_ABANDONED_READS_MAX, in the same reload, saying reloads left them waiting (not earlier reloads)", async () => {
  const clock = new ManualClock();
  const abandoned = new AbandonedReloadReads();
  // Earlier reloads: one short of the bound, all on one path.
  for (let i = 0; i < RELOAD_ABANDONED_READS_MAX - 1; i++) {
    await leaveWaiting(abandoned, clock, "/mnt/nfs/bin/sim");
  }
  assert.equal(abandoned.refusal(), null, "one short of the bound: asked");
  // This reload: its include's read is left waiting (the bound reached), then it asks again.
  await leaveWaiting(abandoned, clock, "/mnt/nfs/bt/sub.xml");
  let asked = 0;
  const next = await abandoned.ask(clock, 1, () => "/etc/tls/cert.pem", () => {
    asked++;
    return Promise.resolve(1);
  });
  assert.equal(asked, 0, "not asked");
  assert.ok(RELOAD_ABANDONED_PATHS_NAMED >= 2);
  assert.deepEqual(next, {
    kind: "refused",
    why: `${RELOAD_ABANDONED_READS_MAX} file-system read(s) that reloads left waiting still ` +
      `hang, on /mnt/nfs/bin/sim (${RELOAD_ABANDONED_READS_MAX - 1}), /mnt/nfs/bt/sub.xml: no ` +
      "reload asks the file system until one returns (at most " +
      `${RELOAD_ABANDONED_READS_MAX} are left waiting, each holding a worker thread)`,
  });
});
