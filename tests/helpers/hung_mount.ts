/**
 * Closing an owner (a journal writer, the audit trail) while its opening waits on a hung mount:
 * in-memory files whose calls of one kind wait at a gate the test holds, the close made while the
 * opening waits there, and the segments of an earlier run the opening would prune or add to.
 */
import assert from "node:assert/strict";
import type { FaultyMemoryFiles } from "./faulty_memory_files.ts";
import { flushMicrotasks } from "./clock.ts";

/** Files some of whose calls wait while `held` is set (a hung mount), counted in `waiting`. */
export interface HungMountFiles {
  held: Promise<void> | null;
  readonly waiting: number;
}

/** How many microtask flushes the opening is given to reach the hung mount, and to end after it. */
const FLUSHES_MAX = 100;

/**
 * Holds `files`' mount, begins `open()`, asserts it waits there (`waits` says what), runs
 * `close()` (the owner stops meanwhile), then lets the mount answer and waits for the opening and
 * what it does after.
 */
export async function closeWhileOpening(
  files: HungMountFiles,
  open: () => Promise<unknown>,
  close: () => Promise<void>,
  waits: string,
): Promise<void> {
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  const opening = open();
  for (let i = 0; i < FLUSHES_MAX && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, waits);
  await close();
  files.held = null;
  release(); // the hung mount answers at last
  await opening;
  for (let i = 0; i < FLUSHES_MAX; i++) await flushMicrotasks();
}

/** Writes each [path, line] as a file of one line (the segments of an earlier run). */
export async function writeSegments(
  files: FaultyMemoryFiles,
  segments: readonly (readonly [string, unknown])[],
): Promise<void> {
  for (const [path, line] of segments) {
    const h = await files.openAppend(path);
    await h.append(`${JSON.stringify(line)}\n`);
    h.close();
  }
}
