/**
 * `GET /v0/incidents/{id}?format=jsonl` of a record that is not whole carries
 * `X-Incident-Incomplete` even when a bound removes the record right after it was read: the header
 * is the read's, not looked up in the listing afterwards (where the pruned record no longer is).
 * The API's handler over a real IncidentRecorder on a hand-fed History (_incident_rig.ts), its
 * files in memory: the read of the record is held after its last line while the next record is
 * written and incident_max_count removes this one.
 */
import assert from "node:assert/strict";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { incidentRig } from "./_incident_rig.ts";

/**
 * MemoryFiles whose read of the record named `damaged` gives its last line damaged (it does not
 * parse), then waits while `held` is set before it ends.
 */
class HeldDamagedRead extends MemoryFiles {
  damaged: string | null = null;
  held: Promise<void> | null = null;
  reading = false;
  override async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    if (this.damaged === null || !path.endsWith(`/${this.damaged}.jsonl`)) {
      yield* super.readLines(path, maxLineBytes);
      return;
    }
    const lines: string[] = [];
    for await (const line of super.readLines(path, maxLineBytes)) lines.push(line);
    lines[lines.length - 1] = "#".repeat(lines[lines.length - 1]!.length);
    yield* lines;
    this.reading = true;
    await this.held;
  }
}

Deno.test("GET /v0/incidents/{id}?format=jsonl of a damaged record pruned as it is read still says X-Incident-Incomplete", async () => {
  const files = new HeldDamagedRead();
  const rig = incidentRig({ files, config: { incidentMaxCount: 1 } });
  const fx = await startHttpFixture({
    start: false,
    services: { history: rig.history, incidents: rig.incidents },
  });
  try {
    await rig.session(async () => {
      rig.poll("p0", "a", 1);
      rig.loss("a");
      rig.clock.advance(1000);
      await rig.incidents.settled();
      const [first] = rig.incidents.list();
      assert.ok(first !== undefined, "a's loss is recorded");
      const id = first.incident_id;

      files.damaged = id;
      let release = () => {};
      files.held = new Promise((r) => (release = r));
      const answer = fx.request("GET", `/v0/incidents/${id}?format=jsonl`);
      for (let i = 0; i < 100 && !files.reading; i++) await Promise.resolve();
      assert.ok(files.reading, "the export read the record");
      // Meanwhile the next record is written and incident_max_count (1) removes this one.
      rig.poll("p0", "b", 2);
      rig.loss("b");
      rig.clock.advance(1000);
      await rig.incidents.settled();
      assert.deepEqual(rig.incidents.list().map((h) => h.devices), [["p0/b"]], "pruned");
      files.held = null;
      release();

      const res = await answer;
      assert.equal(res.status, 200);
      assert.equal(res.text.split("\n").filter(Boolean).length, 2, "the record as read");
      assert.equal(res.headers.get("x-incident-incomplete"), "damaged");
    });
  } finally {
    await fx.close();
  }
});
