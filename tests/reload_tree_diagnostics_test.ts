/**
 * A reload (SIGHUP) checks the behavior tree of the re-read configuration (main.ts
 * behaviorTreeDiagnostics) before the kernel applies it. It read the tree and its includes
 * synchronously, on the event loop's thread: a hung mount there froze the runtime, its API and
 * e-stop included. The reload reads them through reloadFileReader (off that thread, each within
 * RELOAD_FILE_READ_TIMEOUT_MS). A file that does not answer is no error of the configuration (it
 * refused the whole reload when an include hung, though a hung main file failed only the tree):
 * the kernel's load of the files read fails the tree's section naming it, the rest applies
 * (tests/reload_tree_read_once_test.ts). A missing include stays an error of the configuration.
 * Real files but for the hung path (HungReads), the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS, reloadFileReader } from "../src/app/mod.ts";
import { behaviorTreeDiagnostics } from "../src/main.ts";
import { HungReads } from "./helpers/journal_files.ts";
import { ManualClock, runDueUntil, settleOn } from "./helpers/clock.ts";
import { automationConfig, TreeDir } from "./scenarios/automation_helpers.ts";

Deno.test("a reload's check of the behavior tree reads its includes off the event loop's thread, bounded: one that does not answer is left to the tree's load, a missing one is an error", async () => {
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
    assert.deepEqual(diagnostics, [], "no configuration error: the tree's load names the file");
    // Answered, the same files check clean.
    reads.pathPart = null;
    assert.deepEqual(
      await behaviorTreeDiagnostics(config, reloadFileReader(clock, reads.read)),
      [],
    );
    // Missing: an error of the configuration (the reload is refused), naming the include.
    await Deno.remove(`${dir.path}/idle.xml`);
    const missing = await behaviorTreeDiagnostics(config, reloadFileReader(clock, reads.read));
    assert.deepEqual(
      missing.filter((d) => d.message.startsWith(`cannot read included file ${dir.path}/idle.xml`))
        .map((d) => d.severity),
      ["error"],
      JSON.stringify(missing),
    );
  } finally {
    await dir.dispose();
  }
});
