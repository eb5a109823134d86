/**
 * The runtime process on a runtime.data_dir whose disk hangs at start: a FIFO stands in for the
 * newest audit journal segment, so opening it (to read it at the journal's opening) blocks a
 * worker thread, as an open on a dead NFS mount does, until a writer comes -- and none does.
 * The start then ends when runtime.startup_timeout_ms runs out, with one ERROR line naming the
 * stage and the path, and exit 3 (a failed start: systemd restarts it); a stop signal meanwhile
 * ends it at once (exit 0). Linux: the hang is seen as a thread of the runtime in the kernel's
 * wait_for_partner (a FIFO's open waiting for its other end).
 */
import assert from "node:assert/strict";
import { simProvider } from "../helpers/sim_config.ts";
import {
  freePort,
  providerYaml,
  spawnRuntime,
  waitFor,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/** A runtime config in `dir` whose data_dir's first audit segment is a FIFO. */
async function hungAuditConfig(dir: string, startupTimeoutMs: number): Promise<string> {
  await Deno.mkdir(`${dir}/data/audit`, { recursive: true });
  const fifo = `${dir}/data/audit/audit-00000001.jsonl`;
  const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
  assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
  const sim = simProvider("sim0");
  return await writeRuntimeConfig(dir, {
    // Never bound: the start hangs in the audit journal's open, before its port probe.
    port: freePort(),
    runtime: `  shutdown_timeout_ms: 2000\n  startup_timeout_ms: ${startupTimeoutMs}\n`,
    providers: providerYaml("sim0", { command: sim.command, args: sim.args }),
  });
}

/** Whether a thread of process `pid` waits in a FIFO's open for the other end. */
function waitsOnFifoOpen(pid: number): boolean {
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const wchan = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/wchan`);
      if (wchan === "wait_for_partner") return true;
    } catch {
      // the thread ended meanwhile
    }
  }
  return false;
}

Deno.test({
  name:
    "a start whose audit journal's open never returns ends at runtime.startup_timeout_ms: one ERROR line naming the path, exit 3",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-hung-disk-" });
    const rt = spawnRuntime(await hungAuditConfig(dir, 5000));
    try {
      // Bounded only so that a runtime that never ends fails the test rather than hang it.
      const exit = await within(rt.exit, 60000);
      if (exit === "timeout") assert.fail("a hung data_dir kept the runtime from ever ending");
      assert.equal(exit.code, 3, exit.stderr);
      const errors = exit.stderr.split("\n").filter((l) => l.startsWith("ERROR "));
      assert.equal(errors.length, 1, exit.stderr);
      assert.match(
        errors[0]!,
        new RegExp(
          "start-up failed: runtime\\.data_dir did not answer within " +
            "runtime\\.startup_timeout_ms \\(5000 ms\\): opening the audit journal: read " +
            `${dir}/data/audit/audit-00000001\\.jsonl never returned`,
        ),
      );
    } finally {
      await rt.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "SIGTERM while the audit journal's open hangs at start stops the runtime at once (exit 0)",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-hung-disk-" });
    // Only the stop can end this start: its budget is far beyond the test's.
    const rt = spawnRuntime(await hungAuditConfig(dir, 300000));
    try {
      await waitFor("the audit segment's open hanging", () => waitsOnFifoOpen(rt.child.pid), 30000);
      rt.child.kill("SIGTERM");
      const exit = await within(rt.exit, 30000);
      if (exit === "timeout") assert.fail("SIGTERM during a hung start must stop the runtime");
      assert.equal(exit.code, 0, exit.stderr);
      assert.match(exit.stderr, /SIGTERM received during start-up: stopping/);
      assert.doesNotMatch(exit.stderr, /^ERROR /m);
    } finally {
      await rt.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
