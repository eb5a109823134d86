/**
 * A call whose audit entry closes while a run's open is being fsync'd (the run has started) is a
 * `call` event of that run: the kernel hands it to the run registry, which holds the events of
 * that window until the open is durable (the real kernel over the simulated provider).
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { tv } from "../scenarios/automation_helpers.ts";

/** SwitchableFiles whose fsyncs of run files wait for `syncGate` while it is set. */
class SlowRunSyncFiles extends SwitchableFiles {
  syncGate: Promise<void> | null = null;
  syncsWaiting = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    if (!/\/runs(\.jsonl|\/)/.test(path)) return handle;
    return {
      ...handle,
      sync: async () => {
        if (this.syncGate !== null) {
          this.syncsWaiting++;
          await this.syncGate;
          this.syncsWaiting--;
        }
        await handle.sync();
      },
    };
  }
}

Deno.test("Kernel: a call decided and settled while a run's open is being fsync'd is a call event of that run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_open_window_k_" });
  const files = new SlowRunSyncFiles();
  const rt = await startRuntime(testConfig({ runtime: { dataDir: dir } }), {
    arm: true,
    host: { files },
  });
  try {
    let release = () => {};
    files.syncGate = new Promise<void>((r) => (release = r));
    const opening = rt.runs.open({});
    for (let i = 0; i < 1000 && files.syncsWaiting === 0; i++) {
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(files.syncsWaiting, 1, "the open waits for its fsync");
    const duty = (d: number) =>
      rt.router.call({
        providerId: "sim0",
        deviceId: "motorctl0",
        functionName: "set_motor_duty",
        args: { motor_index: tv.i(1), duty: tv.d(d) },
        origin: "manual",
      });
    await duty(0.1);
    await duty(0.2); // another decision: the first one's audit entry closes now
    files.syncGate = null;
    release();
    const { run } = await opening;
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "call").map((e) =>
        (e.payload.args as { duty: { double: number } }).duty.double
      ),
      [0.1, 0.2],
      "both calls were made after the run started",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** The write-ahead records (`intent`) of the audit journal under `dir`, in file order. */
async function intentRecords(dir: string): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  const names: string[] = [];
  for await (const e of Deno.readDir(`${dir}/audit`)) if (e.isFile) names.push(e.name);
  for (const name of names.sort()) {
    for (const line of (await Deno.readTextFile(`${dir}/audit/${name}`)).split("\n")) {
      if (line.trim() === "") continue;
      const rec = JSON.parse(line);
      if (typeof rec.intent === "string" && rec.function === "set_motor_duty") out.push(rec);
    }
  }
  return out;
}

Deno.test("Kernel: a call decided while a run's open is being fsync'd is written ahead with that run's id, so a crash before its outcome makes it that run's interrupted call", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_open_window_wa_" });
  const files = new SlowRunSyncFiles();
  const rt = await startRuntime(testConfig({ runtime: { dataDir: dir } }), {
    arm: true,
    host: { files },
  });
  try {
    let release = () => {};
    files.syncGate = new Promise<void>((r) => (release = r));
    const opening = rt.runs.open({});
    for (let i = 0; i < 1000 && files.syncsWaiting === 0; i++) {
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(files.syncsWaiting, 1, "the open waits for its fsync");
    await rt.router.call({
      providerId: "sim0",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
      args: { motor_index: tv.i(1), duty: tv.d(0.3) },
      origin: "manual",
    });
    files.syncGate = null;
    release();
    const { run } = await opening;
    const records = await intentRecords(dir);
    assert.deepEqual(
      records.map((r) => r.run_id),
      [run.run_id],
      "the call's write-ahead record names the run whose open was being written",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
