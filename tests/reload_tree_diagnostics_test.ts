/**
 * A reload (SIGHUP) checks the behavior tree of the re-read configuration (main.ts
 * behaviorTreeDiagnostics) before the kernel applies it. It read the tree and its includes
 * synchronously, on the event loop's thread: a hung mount there froze the runtime, its API and
 * e-stop included. The reload reads them through reloadFileReader (off that thread, each within
 * RELOAD_FILE_READ_TIMEOUT_MS): a file that does not answer is an error naming it. Real files but
 * for the hung path (HungReads), the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS, reloadFileReader } from "../src/app/mod.ts";
import { behaviorTreeDiagnostics } from "../src/main.ts";
import { HungReads } from "./helpers/journal_files.ts";
import { ManualClock, runDueUntil, settleOn } from "./helpers/clock.ts";
import { automationConfig, TreeDir } from "./scenarios/automation_helpers.ts";

Deno.test("a reload's check of the behavior tree reads its includes off the event loop's thread, bounded, naming one that does not answer", async () => {
  const dir = await TreeDir.create();
  try {
    await dir.write(
      "idle.xml",
      `<root BTCPP_format="4"><BehaviorTree ID="Idle"><Sleep msec="60000" /></BehaviorTree></root>`,
    );
    const main = await dir.write(
      "main.xml",
      `<root BTCPP_format="4" main_tree_to_execute="Main"><include path="idle.xml" />` +
        `<BehaviorTree ID="Main"><SubTree ID="Idle" /></BehaviorTree></root>`,
    );
    const config = automationConfig(main, { config: { providers: [] } });
    const clock = new ManualClock();
    const reads = new HungReads(`${dir.path}/idle.xml`);
    const checking = behaviorTreeDiagnostics(config, reloadFileReader(clock, reads.read));
    await runDueUntil(clock, "idle.xml read", () => reads.hung > 0);
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    const diagnostics = await settleOn(clock, checking, "the check");
    const hung = `cannot read included file ${dir.path}/idle.xml: no answer within ` +
      `${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing disk?)`;
    assert.deepEqual(
      diagnostics.filter((d) => d.message === hung).map((d) => d.severity),
      ["error"],
      JSON.stringify(diagnostics),
    );
    // Answered, the same files check clean.
    reads.pathPart = null;
    assert.deepEqual(
      await behaviorTreeDiagnostics(config, reloadFileReader(clock, reads.read)),
      [],
    );
  } finally {
    await dir.dispose();
  }
});
