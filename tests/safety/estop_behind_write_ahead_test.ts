/**
 * A slow audit disk never delays the e-stop (docs/http-api.md, "Audit trail": "A journal that
 * cannot be written ... never holds up a call or the e-stop"), also when a call holds its
 * provider's lock while it waits for its decision to be written ahead. That call was admitted
 * before the latch and is refused at its turn once the latch holds (it is never sent); its wait
 * for the journal (up to AUDIT_WRITE_AHEAD_TIMEOUT_MS) held the ladder's call behind it all the
 * same, every e-stop, whenever the disk was slow. Virtual time: the clock stands still while the
 * test waits, so the ladder's call reaches the provider without that bound passing, or never.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { ManualClock, runToSettle } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { waitFor } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { rig } from "../helpers/rig.ts";
import { call, d, manualCall, plantProvider } from "./_fixture.ts";

const SET_FAN = 2;

/** Journal files in memory whose audit appends wait, while `stalled`, until `release`. */
class StalledAuditDisk extends MemoryFiles {
  stalled = false;
  held = 0;
  readonly #released = Promise.withResolvers<void>();
  release(): void {
    this.stalled = false;
    this.#released.resolve();
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    if (!path.includes("/audit/")) return handle;
    return {
      ...handle,
      append: async (text: string) => {
        if (this.stalled) {
          this.held++;
          await this.#released.promise;
        }
        await handle.append(text);
      },
    };
  }
}

Deno.test("Estop ladder call is not held behind a call waiting for its write-ahead on a stalled audit disk: that call is refused unsent", async () => {
  const clock = new ManualClock();
  const disk = new StalledAuditDisk();
  const r = await rig({
    clock,
    providers: [plantProvider("plant")],
    pollingIntervalMs: 60000, // no poll waits behind the calls
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
    host: { files: disk },
  });
  const rt = r.kernel;
  const plant = () => r.provider<FakeProvider>("plant");
  try {
    await runToSettle(clock, rt.modes.request("MANUAL"), "MANUAL");
    disk.stalled = true;
    // Takes the provider's lock, then waits for its decision to reach the OS.
    const manual = manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.7) })
      .then(() => "sent", (e: RuntimeError) => `${e.code}: ${e.message}`);
    await waitFor("the manual call's decision held by the disk", () => disk.held > 0);
    const stop = rt.estop.trigger("slow audit disk");
    // The clock stands still: nothing of AUDIT_WRITE_AHEAD_TIMEOUT_MS passes while this waits.
    await waitFor(
      "the ladder's call at the provider while the audit disk stalls",
      () => plant().count("call") > 0,
      5000,
    );
    assert.deepEqual(
      plant().received("call").map((c) => [c.function_name, c.args?.["duty"]?.double_value]),
      [["set_fan", 0]],
      "only the ladder's call reached the provider",
    );
    assert.match(await manual, /^FAILED_PRECONDITION: .*E-stop/);
    const result = await runToSettle(clock, stop, "the e-stop");
    assert.deepEqual(result.actions, [
      { device_handle: "plant/plant0", function: "set_fan", success: true },
    ]);
    assert.deepEqual(result.drain, { complete: true, pending_providers: [] });
    // The refusal settles the decision written ahead: not left in flight, to be recorded
    // `interrupted` by the next start.
    assert.deepEqual(
      rt.audit.inFlightCalls().filter((c) => c.origin.kind !== "estop"),
      [],
      "only the ladder's call, its entry still open, is unsettled",
    );
    disk.release();
    const refused = (await runToSettle(clock, rt.audit.query({ limit: 100 }), "the audit read"))
      .entries.filter((e) => e.outcome === "refused");
    assert.deepEqual(refused.map((e) => [e.function, e.refused_by]), [["set_fan", "estop"]]);
  } finally {
    disk.release();
    await runToSettle(clock, rt.stop(), "the stop");
  }
});
