/**
 * The bounds of the incident records (incident_max_count, incident_max_bytes) and the e-stop's
 * records: a flaky device's losses must not push an e-stop's record out; the oldest record that
 * is not an e-stop's goes first, an e-stop's only when nothing else is left.
 */
import assert from "node:assert/strict";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

function rig(config: Partial<HistoryConfig>, log = testLogger()) {
  const base = incidentRig({ config, log });
  const { clock, incidents, poll, loss, estop } = base;
  /** Publishes a trigger and lets its record be written (a window later). */
  const record = async (what: "estop" | "loss", device = "d0") => {
    poll("p0", device, 1);
    if (what === "estop") estop();
    else loss(device);
    clock.advance(5_000);
    await incidents.settled();
  };
  const kept = () => incidents.list().map((h) => h.trigger).reverse();
  return { ...base, record, kept };
}

Deno.test("incident_max_count removes the oldest record that is not an e-stop's: a flaky device's losses never push an e-stop's record out", async () => {
  const { incidents, record, kept, session } = rig({ incidentMaxCount: 3 });
  await session(async () => {
    await record("loss");
    await record("estop");
    for (let i = 0; i < 5; i++) await record("loss");
    assert.deepEqual(
      kept(),
      ["estop", "device_loss", "device_loss"],
      "the e-stop's record was removed for device losses",
    );
    // With only e-stop records older than the newest, the oldest e-stop goes.
    await record("estop");
    await record("estop");
    await record("estop");
    assert.deepEqual(kept(), ["estop", "estop", "estop"]);
    assert.equal(incidents.status().count, 3);
  });
});

Deno.test("incident_max_bytes removes the oldest record that is not an e-stop's first too", async () => {
  // Measure one record, then keep room for three.
  const probe = rig({});
  let one = 0;
  await probe.session(async () => {
    await probe.record("loss");
    one = probe.incidents.list()[0]!.bytes;
  });

  const { incidents, record, kept, session } = rig({ incidentMaxBytes: 3 * one + one / 2 });
  await session(async () => {
    await record("estop");
    for (let i = 0; i < 4; i++) await record("loss");
    assert.equal(kept()[0], "estop", "the e-stop's record was removed for device losses");
    assert.ok(incidents.status().bytes <= 3 * one + one / 2);
  });
});

Deno.test("A start removes, with a WARN, the incident files whose header is damaged or missing: never listed, they would otherwise hold disk beyond incident_max_bytes for good", async () => {
  const dir = INCIDENTS_DIR;
  const warnings: string[] = [];
  const log = testLogger();
  const { files, incidents, session } = incidentRig({
    config: { ...testConfig().history, incidentMaxBytes: 1024 },
    log: { ...log, warn: (m: string) => void warnings.push(m) } as typeof log,
  });
  const put = async (name: string, text: string) => {
    const h = await files.openAppend(`${dir}/${name}`);
    await h.append(text);
    h.close();
  };
  // A crash tore the header of one (the samples behind it are 64 KiB) and wrote nothing of
  // another.
  await put("inc-1760000000000-1.jsonl", `{"incident_id":"inc-17600\n${"x".repeat(65536)}\n`);
  await put("inc-1760000000001-2.jsonl", "");
  await session(async () => {
    assert.deepEqual(incidents.list(), []);
    assert.deepEqual(
      (await files.listNames(dir)).sort(),
      [],
      "the unreadable incident files are still on disk, counted by no bound",
    );
    assert.equal(warnings.filter((w) => /removed/.test(w)).length, 2, warnings.join("\n"));
  });
});

Deno.test("a record removed as soon as it is written (every other kept record an e-stop's) is said in a WARN, not only gone", async () => {
  const { log, lines } = capturingLogger({ level: "warn" });
  const { incidents, record, kept, session } = rig({ incidentMaxCount: 2 }, log);
  await session(async () => {
    await record("estop");
    await record("estop");
    await record("loss");
    assert.deepEqual(kept(), ["estop", "estop"], "the e-stops' records are kept");
    const said = lines.filter((l) => l.includes("removed as soon as written"));
    assert.equal(said.length, 1, `one WARN: ${lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*incident inc-\d+-3 removed as soon as written: every other record kept is an e-stop's \(history\.incident_max_count 2, history\.incident_max_bytes \d+\); raise them to keep more$/,
    );
    // An older record removed to make room is the bound at work: no WARN.
    await record("estop");
    assert.equal(lines.filter((l) => l.includes("removed as soon as written")).length, 1);
    assert.equal(incidents.status().count, 2);
  });
});
