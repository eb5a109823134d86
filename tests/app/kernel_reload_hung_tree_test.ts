/**
 * A reload reads the behavior tree and its includes again (to compare them with the tree in force,
 * and to load the new one). It read them synchronously, on the event loop's thread: a hung mount
 * there froze the whole runtime, its API and e-stop included, while the providers ran on. They are
 * read off that thread (KernelHost.readRegularFile), each within RELOAD_FILE_READ_TIMEOUT_MS: the
 * e-stop latches meanwhile, and the tree's reload fails naming the file that did not answer, the
 * tree in force kept. Real files but for the hung path (HungReads), the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS } from "../../src/app/kernel.ts";
import { HungReads } from "../helpers/journal_files.ts";
import { newKernel } from "../helpers/kernel.ts";
import { ManualClock, runDueUntil, settleOn } from "../helpers/clock.ts";
import { automationConfig, TreeDir } from "../scenarios/automation_helpers.ts";

const SUB_TREE = `<root BTCPP_format="4">
  <BehaviorTree ID="Idle"><Sleep msec="60000" /></BehaviorTree>
</root>
`;

const MAIN_TREE = `<root BTCPP_format="4" main_tree_to_execute="Main">
  <include path="idle.xml" />
  <BehaviorTree ID="Main"><SubTree ID="Idle" /></BehaviorTree>
</root>
`;

for (const hung of ["main.xml", "idle.xml"] as const) {
  Deno.test(`a reload whose read of ${hung} never answers leaves the e-stop working and fails the tree's reload within RELOAD_FILE_READ_TIMEOUT_MS, naming the file, the tree in force kept`, async () => {
    const dir = await TreeDir.create();
    const clock = new ManualClock();
    const reads = new HungReads();
    try {
      const main = await dir.write("main.xml", MAIN_TREE);
      const sub = await dir.write("idle.xml", SUB_TREE);
      const rt = newKernel(automationConfig(main, { config: { providers: [] } }), {
        clock,
        readRegularFile: reads.read,
      });
      await settleOn(clock, rt.start(), "the start");
      try {
        const before = rt.automation!.automationVersion();
        assert.ok(before !== null, "the tree is loaded");
        // The mount under the file hangs from now on.
        const path = hung === "main.xml" ? main : sub;
        reads.pathPart = path;
        const reloading = rt.reload(rt.config);
        await runDueUntil(clock, `${hung} read again`, () => reads.hung > 0);
        await settleOn(clock, rt.estop.trigger("door opened"), "the e-stop");
        assert.equal(rt.estop.latched, true, "the e-stop latches while the read hangs");
        clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
        const report = await settleOn(clock, reloading, "the reload");
        assert.deepEqual(report.failed.map((f) => f.section), ["automation.behavior_tree"]);
        const why = hung === "main.xml"
          ? `${main}: error: cannot read behavior tree file: `
          : `cannot read included file ${sub}: `;
        assert.ok(
          report.failed[0]!.why.includes(
            `${why}no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing ` +
              "disk?)",
          ),
          report.failed[0]!.why,
        );
        assert.deepEqual(rt.automation!.automationVersion(), before, "the tree in force is kept");
      } finally {
        await settleOn(clock, rt.stop(), "the stop");
      }
    } finally {
      await dir.dispose();
    }
  });
}
