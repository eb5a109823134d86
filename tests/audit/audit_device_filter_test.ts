/**
 * GET /v0/audit's `device_id` filter (`provider/device` or a bare device id) names one device: a
 * device id may hold a "/" (a provider id may not), so a bare id must match a handle's whole device
 * part, never a tail of it -- `valve` is not `bus1/valve`. On the journal and in memory alike.
 */
import assert from "node:assert/strict";
import { AuditTrail } from "../../src/audit/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

function open(handle: string): AuditDecision {
  return {
    action: "call",
    origin: { kind: "http", address: "127.0.0.1" },
    outcome: "accepted",
    device_handle: handle,
    function: "open",
    args: {},
    result: {},
    latency_ms: 1,
  };
}

const HANDLES = ["p0/valve", "p0/bus1/valve", "bus1/valve", "p1/valve"];

async function handlesFor(t: AuditTrail, deviceId: string): Promise<(string | null)[]> {
  const page = await t.query({ deviceId, limit: 100 });
  return page.entries.map((e) => e.device_handle);
}

for (const journaled of [false, true]) {
  Deno.test(`AuditTrail's device_id filter matches a device's whole id, not a tail of a longer one (${journaled ? "journal" : "memory"})`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "audit-device-filter-" });
    try {
      const t = new AuditTrail({
        clock: new ManualClock(),
        log: testLogger(),
        mode: () => "MANUAL",
      });
      if (journaled) {
        await t.openJournal({
          dir,
          files: new SwitchableFiles(),
          maxFileBytes: 1 << 20,
          maxFiles: 2,
        });
      }
      for (const h of HANDLES) t.record(open(h));
      // A bare id: the device `valve` of any provider, not the device `bus1/valve`.
      assert.deepEqual(await handlesFor(t, "valve"), ["p0/valve", "bus1/valve", "p1/valve"]);
      // A bare id holding a "/": the device `bus1/valve` (p0's), and provider bus1's `valve`.
      assert.deepEqual(await handlesFor(t, "bus1/valve"), ["p0/bus1/valve", "bus1/valve"]);
      // provider/device.
      assert.deepEqual(await handlesFor(t, "p0/valve"), ["p0/valve"]);
      await t.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
