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
import { AbandonedReloadReads, RELOAD_ABANDONED_READS_MAX } from "../../src/app/reload_reads.ts";
import { HungReads } from "../helpers/journal_files.ts";
import { newKernel } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runDueUntil, settleOn } from "../helpers/clock.ts";
import { automationConfig, TreeDir } from "../scenarios/automation_helpers.ts";
import { PATH_QUESTIONS_IN_FLIGHT } from "../../src/config/mod.ts";

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

Deno.test("reloads whose read of the tree hangs leave at most RELOAD_ABANDONED_READS_MAX reads waiting, counted with the configuration file's (one count for the process): the next tree reload reads nothing and fails at once naming the file that hangs", async () => {
  const dir = await TreeDir.create();
  const clock = new ManualClock();
  const reads = new HungReads();
  // The count the configuration file's checks share (main.ts): one of theirs already waits.
  const abandoned = new AbandonedReloadReads();
  const elsewhere = abandoned.ask(
    clock,
    1,
    () => "/mnt/nfs/runtime.yaml",
    () => new Promise(() => {}),
  );
  clock.advance(1);
  assert.deepEqual(await elsewhere, { kind: "late" });
  try {
    const main = await dir.write("main.xml", MAIN_TREE);
    await dir.write("idle.xml", SUB_TREE);
    const rt = newKernel(automationConfig(main, { config: { providers: [] } }), {
      clock,
      readRegularFile: reads.read,
      abandonedReloadReads: abandoned,
    });
    await settleOn(clock, rt.start(), "the start");
    try {
      const before = rt.automation!.automationVersion();
      reads.pathPart = main;
      for (let i = 1; i < RELOAD_ABANDONED_READS_MAX; i++) {
        const reloading = rt.reload(rt.config);
        await runDueUntil(clock, `reload ${i}'s read of main.xml`, () => reads.hung === i);
        clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
        const report = await settleOn(clock, reloading, `reload ${i}`);
        assert.deepEqual(report.failed.map((f) => f.section), ["automation.behavior_tree"]);
      }
      // The next: main.xml is not read again; the tree's reload fails without the clock moving.
      let settled = false;
      const reloading = rt.reload(rt.config).finally(() => (settled = true));
      await runDueUntil(
        clock,
        "the reload to end or read",
        () => settled || reads.hung >= RELOAD_ABANDONED_READS_MAX,
      );
      assert.equal(reads.hung, RELOAD_ABANDONED_READS_MAX - 1, "main.xml is not read again");
      assert.equal(abandoned.count, RELOAD_ABANDONED_READS_MAX);
      const report = await reloading;
      assert.deepEqual(report.failed.map((f) => f.section), ["automation.behavior_tree"]);
      const why = `not asked: ${RELOAD_ABANDONED_READS_MAX} file-system read(s) that ` +
        `reloads left waiting still hang, on /mnt/nfs/runtime.yaml, ${main} (${
          RELOAD_ABANDONED_READS_MAX - 1
        }): no reload asks the file system until one returns`;
      assert.ok(report.failed[0]!.why.includes(why), report.failed[0]!.why);
      assert.deepEqual(rt.automation!.automationVersion(), before, "the tree in force is kept");
    } finally {
      await settleOn(clock, rt.stop(), "the stop");
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("a reload of a tree including 20 files on a hung mount asks at most PATH_QUESTIONS_IN_FLIGHT reads at once, none more once one went unanswered: the tree's reload fails naming the file that hung, the tree in force kept", async () => {
  const dir = await TreeDir.create();
  const clock = new ManualClock();
  const reads = new HungReads();
  const abandoned = new AbandonedReloadReads();
  const INCLUDES = 20;
  try {
    const names = Array.from({ length: INCLUDES }, (_, i) => `inc${String(i).padStart(2, "0")}`);
    for (const name of names) {
      await dir.write(
        `${name}.xml`,
        `<root BTCPP_format="4">\n  <BehaviorTree ID="${name}"><Sleep msec="60000" />` +
          `</BehaviorTree>\n</root>\n`,
      );
    }
    const main = await dir.write(
      "main.xml",
      `<root BTCPP_format="4" main_tree_to_execute="Main">\n` +
        names.map((n) => `  <include path="${n}.xml" />\n`).join("") +
        `  <BehaviorTree ID="Main"><Sequence>` +
        names.map((n) => `<SubTree ID="${n}" />`).join("") +
        `</Sequence></BehaviorTree>\n</root>\n`,
    );
    const rt = newKernel(automationConfig(main, { config: { providers: [] } }), {
      clock,
      readRegularFile: reads.read,
      abandonedReloadReads: abandoned,
    });
    await settleOn(clock, rt.start(), "the start");
    try {
      const before = rt.automation!.automationVersion();
      assert.ok(before !== null, "the tree is loaded");
      // The mount under the included files hangs from now on (main.xml still answers).
      reads.pathPart = `${dir.path}/inc`;
      const reloading = rt.reload(rt.config);
      await runDueUntil(clock, "the includes read again", () => reads.hung > 0);
      await flushMicrotasks();
      assert.equal(reads.hung, PATH_QUESTIONS_IN_FLIGHT, "reads asked at once");
      clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
      const report = await settleOn(clock, reloading, "the reload");
      assert.equal(reads.hung, PATH_QUESTIONS_IN_FLIGHT, "no read asked once one went unanswered");
      assert.ok(abandoned.count <= RELOAD_ABANDONED_READS_MAX, `${abandoned.count} left waiting`);
      assert.deepEqual(report.failed.map((f) => f.section), ["automation.behavior_tree"]);
      const why = report.failed[0]!.why;
      const first = `${dir.path}/${names[0]}.xml`;
      assert.ok(
        why.includes(
          `cannot read included file ${first}: no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms`,
        ),
        why,
      );
      const last = `${dir.path}/${names[INCLUDES - 1]}.xml`;
      assert.ok(
        why.includes(`cannot read included file ${last}: not asked: the read of ${first} did not`),
        why,
      );
      assert.deepEqual(rt.automation!.automationVersion(), before, "the tree in force is kept");
    } finally {
      await settleOn(clock, rt.stop(), "the stop");
    }
  } finally {
    await dir.dispose();
  }
});
