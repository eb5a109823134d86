/**
 * A device id comes from a provider: the incident recorder's log lines quote the cause that holds
 * it (JSON-quoted, cut to INCIDENT_QUOTED_CAUSE_CHARS), so the id's text is told from the line's
 * own words (a quote in it is escaped; a line break too) and an id of any length makes no line
 * longer than the bound. The record itself keeps the cause as it was.
 */
import assert from "node:assert/strict";
import { INCIDENT_QUOTED_CAUSE_CHARS, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { incidentRig } from "./_incident_rig.ts";

Deno.test("IncidentRecorder quotes the cause in its 'recorded' line: a device id with a quote and a line break stays in one line", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, loss, session } = incidentRig({ config: { incidentAfterS: 1 }, log });
  const device = 'd"x\nERROR forged line';
  await session(async () => {
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    assert.equal(incidents.status().count, 1);
    const recorded = lines.filter((l) => l.includes(" recorded: "));
    assert.equal(recorded.length, 1, lines.join("\n"));
    // Before: `recorded: device_loss (device p0/d"x\nERROR forged line lost), ...`: the id ran
    // into the line's own words, unquoted and uncut.
    assert.match(
      recorded[0]!,
      /^INFO .*incident inc-\S+ recorded: device_loss "device p0\/d\\"x\\nERROR forged line lost", \d+ signal\(s\), \d+ sample\(s\)$/,
    );
    // The record keeps the cause as it was (the API answers it as JSON).
    assert.equal(incidents.list()[0]!.cause, `device p0/${device} lost`);
  });
});

Deno.test("IncidentRecorder cuts a long cause in its log lines at INCIDENT_QUOTED_CAUSE_CHARS", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, loss, session } = incidentRig({ config: { incidentAfterS: 1 }, log });
  const device = "d".repeat(INCIDENT_QUOTED_CAUSE_CHARS * 2);
  await session(async () => {
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    const recorded = lines.filter((l) => l.includes(" recorded: "));
    assert.equal(recorded.length, 1, lines.join("\n"));
    const cut = `device p0/${device}`.slice(0, INCIDENT_QUOTED_CAUSE_CHARS);
    assert.ok(recorded[0]!.includes(`recorded: device_loss "${cut}\u2026", `), recorded[0]);
  });
});
