/**
 * A record the bounds removed (history.incident_max_count, history.incident_max_bytes) was linked
 * from its run's `incident` event, and the link answered a bare "Incident not found", as for an
 * id that never was (one never written says so since c478ce37). The 404 now names the bound that
 * removed it, for the last INCIDENT_GONE_IDS_MAX records not kept (removed or never written, the
 * oldest forgotten first). Those reasons were kept in memory only: after a restart the 404 was
 * bare again; they are kept on disk now (INCIDENT_GONE_FILE beside the records, bounded as they
 * are). In process: the
 * recorder over a hand-fed History on a manual clock (a restart: another over the same files).
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import type { HistoryConfig } from "../../src/config/mod.ts";
import {
  INCIDENT_GONE_FILE,
  INCIDENT_GONE_IDS_MAX,
  INCIDENT_STOP_WAIT_MS,
  MERGE_WINDOW_MS,
} from "../../src/history/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { MemoryFiles, RecordingMemoryFiles } from "../helpers/memory_files.ts";
import { incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

/** What a 404 of `id` says (the error get() and jsonl() throw). */
async function notFound(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "NOT_FOUND");
  assert.equal((err as { code?: string }).code, "NOT_FOUND", String(err));
  return err.message;
}

/** The lines of the one file beside the records in their folder (INCIDENT_GONE_FILE). */
async function besideRecords(files: MemoryFiles): Promise<string[]> {
  const names = (await files.listNames(INCIDENTS_DIR)).filter((n) => !n.startsWith("inc-"));
  assert.equal(names.length, 1, `beside the records: ${names.join(", ")}`);
  return files.text(`${INCIDENTS_DIR}/${names[0]}`).trimEnd().split("\n");
}

function rig(config: Partial<HistoryConfig>, files?: MemoryFiles, log?: Logger) {
  const base = incidentRig({
    config: { incidentAfterS: 1, ...config },
    ...(files ? { files } : {}),
    ...(log ? { log } : {}),
  });
  const { clock, incidents, poll, loss } = base;
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  /** One incident of its own (beyond the merge window), its record written: its id. */
  const incident = async (device = "d0") => {
    poll("p0", device, 1);
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    return ids.at(-1)!;
  };
  return { ...base, incident };
}

Deno.test("IncidentRecorder: the link to a record removed by incident_max_count answers 404 naming the bound, for the last INCIDENT_GONE_IDS_MAX of them", async () => {
  const { incidents, incident, session } = rig({ incidentMaxCount: 2 });
  await session(async () => {
    const first = await incident();
    await incident();
    await incident();
    assert.equal(incidents.list().length, 2);
    const said = `Incident not found: ${first} (removed by history.incident_max_count, 2: ` +
      `the oldest records make way for new ones)`;
    assert.equal(await notFound(incidents.get(first)), said);
    assert.equal(await notFound(incidents.jsonl(first)), said);
    assert.equal(await notFound(incidents.get("inc-1-999")), "Incident not found: inc-1-999");

    // Bounded: once INCIDENT_GONE_IDS_MAX more were removed, the first is forgotten.
    const removed: string[] = [];
    for (let i = 0; i < INCIDENT_GONE_IDS_MAX; i++) removed.push(await incident());
    assert.equal(await notFound(incidents.get(first)), `Incident not found: ${first}`);
    assert.match(await notFound(incidents.get(removed[0]!)), /removed by history\.incident_max/);
  });
});

Deno.test("IncidentRecorder: the link to a record removed by incident_max_bytes answers 404 naming it", async () => {
  const probe = rig({});
  let one = 0;
  await probe.session(async () => {
    await probe.incident();
    one = probe.incidents.list()[0]!.bytes;
  });
  const max = 2 * one + Math.floor(one / 2);
  const { incidents, incident, session } = rig({ incidentMaxBytes: max });
  await session(async () => {
    const first = await incident();
    await incident();
    await incident();
    assert.equal(incidents.list().length, 2);
    assert.equal(
      await notFound(incidents.get(first)),
      `Incident not found: ${first} (removed by history.incident_max_bytes, ${max}: the oldest ` +
        `records make way for new ones)`,
    );
  });
});

Deno.test("IncidentRecorder: after a restart on the same files, the link to a removed record answers the same 404 reason, for the last INCIDENT_GONE_IDS_MAX of them", async () => {
  const before = rig({ incidentMaxCount: 2 });
  const ids: string[] = [];
  const said = new Map<string, string>();
  await before.session(async () => {
    // INCIDENT_GONE_IDS_MAX + 1 removed: the first is forgotten already.
    for (let i = 0; i < INCIDENT_GONE_IDS_MAX + 3; i++) ids.push(await before.incident());
    for (const id of ["inc-1-999", ...ids.slice(0, -2)]) {
      said.set(id, await notFound(before.incidents.get(id)));
    }
  });
  const [forgotten, oldest] = ids;
  const newest = ids.at(-3)!;
  const bound =
    "removed by history.incident_max_count, 2: the oldest records make way for new ones";
  assert.equal(said.get(oldest!), `Incident not found: ${oldest} (${bound})`);
  assert.equal(said.get(forgotten!), `Incident not found: ${forgotten}`);

  // A restart: another recorder over the same files.
  const after = rig({ incidentMaxCount: 2 }, before.files);
  await after.session(async () => {
    assert.equal(after.incidents.list().length, 2);
    // Every one as before the restart: the last INCIDENT_GONE_IDS_MAX removed naming the bound,
    // the one forgotten before it and one never noted bare.
    for (const [id, message] of said) {
      assert.equal(await notFound(after.incidents.get(id)), message);
      assert.equal(await notFound(after.incidents.jsonl(id)), message);
    }
    // New removals go on from what was read: still bounded, the oldest forgotten first.
    await after.incident();
    await after.incident();
    assert.equal(await notFound(after.incidents.get(oldest!)), `Incident not found: ${oldest}`);
    assert.equal(
      await notFound(after.incidents.get(newest)),
      `Incident not found: ${newest} (${bound})`,
    );
  });
  const lines = await besideRecords(after.files);
  assert.equal(lines.length, INCIDENT_GONE_IDS_MAX, "the file is bounded as the ids in memory are");
});

Deno.test("IncidentRecorder: after a restart on a wall clock that repeats the last boot's, a new incident never takes the id of a record not kept: that link still answers its 404", async () => {
  const before = rig({});
  let kept = "";
  let gone = "";
  let said = "";
  await before.session(async () => {
    kept = await before.incident("d0");
    gone = await before.incident("d1");
    // Removed by hand: the newest id, so above every counter left on disk.
    await before.files.remove(`${INCIDENTS_DIR}/${gone}.jsonl`);
    said = await notFound(before.incidents.get(gone));
  });
  assert.equal(said, `Incident not found: ${gone} (its file is gone)`);
  // A board without a real-time clock: the wall clock starts again where the last boot's did,
  // and the next incident comes in the millisecond the one removed by hand came in.
  const after = rig({}, before.files);
  await after.session(async () => {
    after.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    const next = await after.incident("d2");
    assert.notEqual(next, gone, "a new incident took the id of one its run's link says is gone");
    assert.deepEqual(after.incidents.list().map((h) => h.incident_id).sort(), [kept, next].sort());
    assert.equal(await notFound(after.incidents.get(gone)), said);
  });
});

/** MemoryFiles whose INCIDENT_GONE_FILE cannot be read while `unreadable` (an I/O error). */
class GoneUnreadable extends MemoryFiles {
  unreadable = false;
  override async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    if (this.unreadable && path.endsWith(`/${INCIDENT_GONE_FILE}`)) {
      throw new Error("EIO: input/output error (os error 5)");
    }
    yield* super.readLines(path, maxLineBytes);
  }
}

Deno.test("IncidentRecorder: a start that cannot read the ids not kept leaves their file as it is: a record removed then does not write over the reasons of the last boot", async () => {
  const files = new GoneUnreadable();
  const first = rig({ incidentMaxCount: 1 }, files);
  let removed = "";
  let said = "";
  await first.session(async () => {
    removed = await first.incident("d0");
    await first.incident("d1");
    said = await notFound(first.incidents.get(removed));
  });
  assert.match(said, /removed by history\.incident_max_count/);
  const written = await besideRecords(files);
  // A start that cannot read the file (an I/O error) removes one more record meanwhile.
  files.unreadable = true;
  const second = rig({ incidentMaxCount: 1 }, files);
  await second.session(async () => {
    second.clock.advance(10 * (1000 + MERGE_WINDOW_MS + 100));
    await second.incident("d2");
    assert.equal(second.incidents.list().length, 1);
  });
  assert.deepEqual(await besideRecords(files), written, "the file not read is left as it is");
  // Readable again: the last boot's reasons are all there.
  files.unreadable = false;
  const third = rig({ incidentMaxCount: 1 }, files);
  await third.session(async () => {
    assert.equal(await notFound(third.incidents.get(removed)), said);
  });
});

/** MemoryFiles whose replacement of INCIDENT_GONE_FILE hangs while `hold` (a hung disk). */
class HeldGoneRename extends MemoryFiles {
  hold = false;
  readonly held: (() => void)[] = [];
  override async rename(from: string, to: string): Promise<void> {
    if (this.hold && to.endsWith(`/${INCIDENT_GONE_FILE}`)) {
      await new Promise<void>((resolve) => this.held.push(resolve));
    }
    await super.rename(from, to);
  }
}

Deno.test("IncidentRecorder: a stop outlasted by a hung write of the ids not kept says so, not that a record was left unwritten", async () => {
  const files = new HeldGoneRename();
  const { log, lines } = capturingLogger({ level: "warn" });
  const r = rig({ incidentMaxCount: 1 }, files, log);
  await r.start();
  let stopped = false;
  try {
    await r.incident("d0");
    // The next record is written, and removes the first: the ids not kept are written, and hang.
    files.hold = true;
    r.poll("p0", "d1", 1);
    r.loss("d1");
    r.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await waitFor("the hung write", () => files.held.length === 1, 5000, 1);
    assert.equal(r.incidents.list().length, 1);
    const stopping = r.stop();
    await r.clock.advanceAsync(INCIDENT_STOP_WAIT_MS);
    await stopping;
    stopped = true;
    const said = lines.filter((l) => l.includes("not written within")).join("\n");
    assert.doesNotMatch(said, /incident record\(s\) not written/, "every record was written");
    assert.match(said, new RegExp(`${INCIDENT_GONE_FILE} not written within`));
  } finally {
    for (const release of files.held) release();
    if (!stopped) await r.stop();
  }
});

Deno.test("IncidentRecorder: a record put back by hand leaves the ids not kept at the next start, and a later removal notes it as the newest", async () => {
  const before = rig({ incidentMaxCount: 2 });
  let restored = "";
  let text = "";
  await before.session(async () => {
    restored = await before.incident("d0");
    text = before.files.text(`${INCIDENTS_DIR}/${restored}.jsonl`);
    await before.incident("d1");
    await before.incident("d2"); // removes the first
    await before.incident("d3");
  });
  const idOf = (line: string) => JSON.parse(line).incident_id as string;
  assert.equal(idOf((await besideRecords(before.files))[0]!), restored);
  // Put back by hand (a copy restored from a backup).
  const h = await before.files.openAppend(`${INCIDENTS_DIR}/${restored}.jsonl`);
  await h.append(text);
  h.close();

  const after = rig({ incidentMaxCount: 3 }, before.files);
  await after.session(async () => {
    assert.ok(after.incidents.list().some((x) => x.incident_id === restored));
    assert.equal((await after.incidents.get(restored)).incident.incident_id, restored);
    await after.incidents.settled();
    const listed = (await besideRecords(after.files)).map(idOf);
    assert.ok(!listed.includes(restored), `still listed as not kept: ${listed.join(", ")}`);
    // Removed again (the oldest record): noted as any new removal, after those before it.
    after.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await after.incident("d4");
    assert.ok(!after.incidents.list().some((x) => x.incident_id === restored));
    const again = (await besideRecords(after.files)).map(idOf);
    assert.equal(again.at(-1), restored, `the ids not kept: ${again.join(", ")}`);
    assert.equal(again.length, listed.length + 1);
    assert.match(
      await notFound(after.incidents.get(restored)),
      /removed by history\.incident_max_count, 3/,
    );
  });
});

Deno.test("IncidentRecorder replaces the ids not kept whole (replaceWhole): written beside, fsync'd, renamed over; a rename that fails leaves the last file and is tried again with the next record", async () => {
  const files = new RecordingMemoryFiles((p) => p.includes(`/${INCIDENT_GONE_FILE}`));
  const { log, lines } = capturingLogger({ level: "debug" });
  const r = rig({ incidentMaxCount: 1 }, files, log);
  const idOf = (line: string) => JSON.parse(line).incident_id as string;
  await r.session(async () => {
    const first = await r.incident("d0");
    const second = await r.incident("d1"); // removes the first
    assert.deepEqual(files.calls, [
      `remove ${INCIDENT_GONE_FILE}.tmp`,
      `open ${INCIDENT_GONE_FILE}.tmp`,
      `append ${INCIDENT_GONE_FILE}.tmp`,
      `sync ${INCIDENT_GONE_FILE}.tmp`,
      `close ${INCIDENT_GONE_FILE}.tmp`,
      `rename ${INCIDENT_GONE_FILE}.tmp ${INCIDENT_GONE_FILE}`,
    ]);
    assert.deepEqual((await besideRecords(files)).map(idOf), [first]);
    // The rename refused: the last file stays, no temporary file beside it, said at DEBUG.
    files.failing = "rename";
    const third = await r.incident("d2"); // removes the second
    assert.deepEqual((await besideRecords(files)).map(idOf), [first]);
    assert.deepEqual(
      lines.filter((l) => l.includes(`${INCIDENT_GONE_FILE} not written`)).length,
      1,
      lines.join("\n"),
    );
    assert.match(lines.join("\n"), /not written: EIO: rename failed/);
    // Written again with the next record (which removes the third).
    files.failing = null;
    await r.incident("d3");
    assert.deepEqual((await besideRecords(files)).map(idOf), [first, second, third]);
  });
});
