/**
 * A start abandoned while the incident folder (or the disk tier's) hangs (runtime.data_dir on a mount gone: the
 * kernel's start-up budget, or stop()) is stopped before its reading of the kept records returns;
 * should that reading return at last, the stopped recorder must not follow the bus from then on:
 * a trigger after the stop is no incident of it -- no timer of a stopped runtime, no record written
 * into the folder beside a later runtime's -- nor does it remove what it read there. An IncidentRecorder over a hand-fed History on a
 * manual clock; the folder's listing held until the test lets it go.
 */
import assert from "node:assert/strict";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { HeldRemovals, incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

/** MemoryFiles whose listing of one folder waits until `release()` (a hung mount). */
class HeldListing extends MemoryFiles {
  readonly #dir: string;
  #release: (() => void) | null = null;
  readonly #released = new Promise<void>((r) => this.#release = r);
  /** Listings of the incident folder held so far. */
  held = 0;
  constructor(dir: string) {
    super();
    this.#dir = dir;
  }
  release(): void {
    this.#release?.();
  }
  override async listNames(dir: string): Promise<string[]> {
    if (dir === this.#dir) {
      this.held++;
      await this.#released;
    }
    return await super.listNames(dir);
  }
}

Deno.test("an incident recorder stopped while its start reads the folder follows no trigger once that reading returns", async () => {
  const files = new HeldListing(INCIDENTS_DIR);
  const rig = incidentRig({ files });
  const { clock, incidents, history } = rig;
  // A record whose header is damaged (a crash while it was written): a start removes it.
  const damaged = await files.openAppend(`${INCIDENTS_DIR}/inc-1-1.jsonl`);
  await damaged.append("not a header\n");
  damaged.close();
  await history.start();
  const starting = incidents.start(rig.bus);
  await flushMicrotasks();
  assert.equal(files.held, 1, "the start waits on the folder");
  await incidents.stop(); // the start abandoned, the runtime stopped
  await history.stop();
  files.release(); // the hung mount answers at last
  await starting;
  rig.estop(); // a machine-wide trigger on the stopped runtime's bus
  assert.equal(incidents.status().pending, 0, "the stopped recorder began an incident");
  assert.equal(clock.pendingTimers, 0, "a timer of the stopped recorder runs");
  clock.advance(5000);
  await incidents.settled();
  assert.deepEqual(
    (await files.listNames(INCIDENTS_DIR)).filter((n) => n.startsWith("inc-")),
    ["inc-1-1.jsonl"],
    "the stopped recorder wrote a record, or removed a file, after the stop",
  );
});

Deno.test("a history stopped while its start opens the disk tier records no poll once that opening returns", async () => {
  // The disk tier's folder listing held: the history's start waits on it, and is abandoned.
  const files = new HeldListing("/data/history");
  const { history, following } = handFedHistory({ diskMaxBytes: 1 << 20 }, files);
  const starting = history.start();
  await flushMicrotasks();
  assert.ok(files.held > 0, "the start waits on the folder");
  await history.stop();
  files.release();
  await starting;
  assert.equal(following(), false, "the stopped history follows the cache's polls");
});

Deno.test("a history stopped while its start opens the disk tier holds no file of it once that opening returns", async () => {
  // The disk tier's folder listing held: the stop closes the tier while its opening waits.
  const files = new HeldListing("/data/history");
  let openHandles = 0;
  const openAppend = files.openAppend.bind(files);
  files.openAppend = async (path: string) => {
    const h = await openAppend(path);
    openHandles++;
    return { ...h, close: () => (openHandles--, h.close()) };
  };
  const { history } = handFedHistory({ diskMaxBytes: 1 << 20 }, files);
  const starting = history.start();
  await flushMicrotasks();
  assert.ok(files.held > 0, "the start waits on the folder");
  await history.stop();
  files.release(); // the hung mount answers at last
  await starting;
  await flushMicrotasks();
  assert.equal(openHandles, 0, "the stopped history's disk tier holds a file open");
});

Deno.test("an incident recorder stopped while its start prunes the kept records removes no more once the removal under way returns", async () => {
  // Three records kept by an earlier runtime.
  const files = new HeldRemovals();
  const earlier = incidentRig({ files });
  await earlier.session(async () => {
    for (const d of ["d0", "d1", "d2"]) {
      earlier.poll("p0", d, 1);
      earlier.loss(d);
      earlier.clock.advance(5_000);
      await earlier.incidents.settled();
    }
  });
  const records = async () =>
    (await files.listNames(INCIDENTS_DIR)).filter((n) => n.startsWith("inc-")).sort();
  const kept = await records();
  assert.equal(kept.length, 3);

  // A start with incident_max_count lowered to 1 prunes two; its first removal hangs, and the
  // start is abandoned: the runtime stops.
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  const { incidents, history, bus } = incidentRig({ files, config: { incidentMaxCount: 1 } });
  await history.start();
  const starting = incidents.start(bus);
  for (let i = 0; i < 100 && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, "the start's prune waits on a removal");
  await incidents.stop();
  await history.stop();
  files.held = null;
  release(); // the hung mount answers at last
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  await incidents.settled();
  assert.deepEqual(
    await records(),
    kept.slice(1),
    "the stopped recorder went on removing records after the stop",
  );
});

Deno.test("a history stopped while its start opens the disk tier removes no file of an earlier run and begins none once that opening returns", async () => {
  // An earlier run's files, its newest past a file's share (disk_max_bytes lowered since): an
  // open begins a new file and removes the oldest past disk_max_bytes.
  const files = new HeldListing("/data/history");
  const segment = (n: number) => `/data/history/history-0000000${n}.jsonl`;
  for (const [n, bytes] of [[1, 600_000], [2, 600_000], [3, 70_000]] as const) {
    const h = await files.openAppend(segment(n));
    await h.append(`${"x".repeat(bytes - 1)}\n`);
    h.close();
  }
  const { history } = handFedHistory({ diskMaxBytes: 1 << 20 }, files);
  const starting = history.start();
  await flushMicrotasks();
  assert.ok(files.held > 0, "the start waits on the folder");
  await history.stop();
  files.release(); // the hung mount answers at last
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  assert.deepEqual(
    (await files.listNames("/data/history")).sort(),
    [1, 2, 3].map((n) => segment(n).slice("/data/history/".length)),
    "the stopped history's disk tier removed a file or began one",
  );
});
