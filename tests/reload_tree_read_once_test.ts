/**
 * A reload (SIGHUP) checks the behavior tree of the re-read configuration (main.ts configReload)
 * and the kernel then loads it (AutomationEngine.reloadTree). Each read the tree and its includes
 * on its own: a file edited between the two reads was checked in one version and loaded in
 * another, and on a hung mount the kernel's second read was refused by the process-wide bound
 * (RELOAD_ABANDONED_READS_MAX, which the check's read had just reached), the failure naming that
 * bound instead of the file that hung. The kernel now loads the files as the checks read them
 * (ReloadedConfig.treeFiles): each is read once. Real files and a real kernel; the reload's host
 * read counted (and, for one path, never answering); the reload's bound on a clock moved by hand.
 */
import assert from "node:assert/strict";
import {
  AbandonedReloadReads,
  RELOAD_ABANDONED_READS_MAX,
  RELOAD_FILE_READ_TIMEOUT_MS,
  type ReloadedConfig,
} from "../src/app/mod.ts";
import type { Kernel } from "../src/app/kernel.ts";
import type { RuntimeEvent } from "../src/events/mod.ts";
import { commandOnPath, readRegularFile, type RegularFileRead, statPath } from "../src/host/mod.ts";
import { configReload } from "../src/main.ts";
import { ManualClock } from "./helpers/clock.ts";
import { newKernel, recordEvents, tempDir, waitFor } from "./helpers/kernel.ts";
import { simProvider } from "./helpers/sim_config.ts";

type ReloadEvent = Extract<RuntimeEvent, { kind: "config_reload" }>;

/** An API token the reload sets (a live key: applied in place, whatever the tree does). */
const TOKEN = "reload-test-token-0123456789abcdef";

/** The main tree, including idle.xml; `msec` tells the versions apart. */
const mainTree = (msec: number) =>
  `<root BTCPP_format="4" main_tree_to_execute="Main">\n  <include path="idle.xml" />\n` +
  `  <BehaviorTree ID="Main"><Sequence><Sleep msec="${msec}" /><SubTree ID="Idle" />` +
  `</Sequence></BehaviorTree>\n</root>\n`;

const IDLE_TREE = `<root BTCPP_format="4">\n  <BehaviorTree ID="Idle"><Sleep msec="60000" />` +
  `</BehaviorTree>\n</root>\n`;

/** The reload's host read, counted per path; `hangs` never answers; `thenWrite` edits a file. */
class TreeReads {
  readonly counts = new Map<string, number>();
  /** Written over its path right after that path's next read has answered. */
  thenWrite: { path: string; text: string } | null = null;
  /** The path whose reads never answer (a hung mount). */
  hangs: string | null = null;
  /** Reads of `hangs` so far. */
  hung = 0;
  readonly read = async (path: string, maxBytes: number): Promise<RegularFileRead> => {
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    if (path === this.hangs) {
      this.hung++;
      return await new Promise<RegularFileRead>(() => {});
    }
    const got = await readRegularFile(path, maxBytes);
    const edit = this.thenWrite;
    if (edit !== null && edit.path === path) {
      this.thenWrite = null;
      await Deno.writeTextFile(edit.path, edit.text);
    }
    return got;
  };
}

/**
 * A folder with runtime.yaml (automation on, main.xml including idle.xml, the simulated
 * provider), the reload of it over `reads` and `abandoned`, and a kernel started with its
 * configuration.
 */
async function rig(reads: TreeReads, clock: ManualClock, abandoned: AbandonedReloadReads) {
  const dir = tempDir("runtime-reload-tree-once-");
  const file = `${dir}/runtime.yaml`;
  const main = `${dir}/main.xml`;
  const idle = `${dir}/idle.xml`;
  const sim = simProvider("sim0");
  await Deno.writeTextFile(main, mainTree(1000));
  await Deno.writeTextFile(idle, IDLE_TREE);
  await Deno.writeTextFile(
    file,
    `runtime:\n  name: rig\n  data_dir: ${dir}/data\nproviders:\n  - id: sim0\n` +
      `    command: ${JSON.stringify(sim.command)}\n    args: ${JSON.stringify(sim.args)}\n` +
      `automation:\n  enabled: true\n  behavior_tree: main.xml\n`,
  );
  const reload = configReload(
    file,
    { file, logLevel: null },
    { port: null, logLevel: null },
    { logLevel: "info", automationEnabled: true },
    { clock, readRegularFile: reads.read, stat: statPath, commandOnPath, abandoned },
  );
  const first: ReloadedConfig = await reload();
  assert.ok(first.ok, JSON.stringify(first));
  const rt: Kernel = newKernel(first.config, {
    loadConfig: reload,
    readRegularFile: reads.read,
    abandonedReloadReads: abandoned,
  });
  await rt.start();
  reads.counts.clear();
  return { rt, main, idle, file };
}

Deno.test("a reload loads the behavior tree as its checks read it: a file edited after the check is not what loads, and each tree file is read once", async () => {
  const reads = new TreeReads();
  const clock = new ManualClock();
  const { rt, main, idle } = await rig(reads, clock, new AbandonedReloadReads());
  const recorder = recordEvents(rt);
  try {
    assert.equal(await rt.automation!.treeXml(), mainTree(1000));
    await Deno.writeTextFile(main, mainTree(2000));
    // Edited again right after the reload's first read of it: the version checked is 2000.
    reads.thenWrite = { path: main, text: mainTree(3000) };
    await rt.reloader!.request();
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    assert.deepEqual(events.map((e) => [e.result, e.refused, e.errors]), [["applied", [], []]]);
    assert.equal(await rt.automation!.treeXml(), mainTree(2000), "the version checked loads");
    assert.deepEqual(
      [reads.counts.get(main), reads.counts.get(idle)],
      [1, 1],
      "each tree file is read once by the reload",
    );
  } finally {
    recorder.stop();
    await rt.stop();
  }
});

Deno.test("a reload of a file that turns automation.enabled off (a restart's business) still checks the tree the running automation loads, and reads each tree file once", async () => {
  const reads = new TreeReads();
  const clock = new ManualClock();
  const { rt, main, idle, file } = await rig(reads, clock, new AbandonedReloadReads());
  const recorder = recordEvents(rt);
  try {
    await Deno.writeTextFile(main, mainTree(2000));
    const text = await Deno.readTextFile(file);
    await Deno.writeTextFile(file, text.replace("enabled: true", "enabled: false"));
    await rt.reloader!.request();
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    assert.deepEqual(events.map((e) => [e.result, e.errors]), [["applied", []]]);
    assert.equal(await rt.automation!.treeXml(), mainTree(2000), "the running automation loads it");
    assert.deepEqual(
      [reads.counts.get(main), reads.counts.get(idle)],
      [1, 1],
      "each tree file is read once by the reload",
    );
    // A tree that does not verify is the reload's error, as with automation on in the file.
    await Deno.writeTextFile(main, '<root BTCPP_format="4"><BehaviorTree ID="Main">');
    await rt.reloader!.request();
    const second = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload")[1];
    assert.equal(second?.result, "failed", JSON.stringify(second));
    assert.ok(second!.errors.some((e) => e.includes("main.xml")), JSON.stringify(second!.errors));
    assert.equal(await rt.automation!.treeXml(), mainTree(2000), "the tree in force is kept");
  } finally {
    recorder.stop();
    await rt.stop();
  }
});

Deno.test("a reload whose read of the behavior tree hangs, with the process-wide count one short of RELOAD_ABANDONED_READS_MAX: the tree's reload fails naming the file that hung, not the bound, and the file is read once", async () => {
  const reads = new TreeReads();
  const clock = new ManualClock();
  const abandoned = new AbandonedReloadReads();
  // Earlier reloads left reads waiting on other mounts: one short of the bound.
  for (let i = 0; i < RELOAD_ABANDONED_READS_MAX - 1; i++) {
    const left = abandoned.ask(clock, 1, () => `/mnt/nfs${i}/runtime.yaml`, () => {
      return new Promise<never>(() => {});
    });
    clock.advance(1);
    assert.deepEqual(await left, { kind: "late" });
  }
  const { rt, main } = await rig(reads, clock, abandoned);
  const recorder = recordEvents(rt);
  try {
    const before = rt.automation!.automationVersion();
    assert.ok(before !== null, "the tree is loaded");
    reads.hangs = main;
    const reloading = rt.reloader!.request();
    await waitFor("the reload's read of main.xml", () => reads.hung > 0);
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    await reloading;
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    assert.deepEqual(events.map((e) => e.refused.length), [1], JSON.stringify(events));
    const refused = events[0]!.refused[0]!;
    assert.ok(refused.startsWith("automation.behavior_tree: "), refused);
    assert.ok(
      refused.includes(
        `${main}: error: cannot read behavior tree file: no answer within ` +
          `${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing disk?)`,
      ),
      refused,
    );
    assert.equal(reads.counts.get(main), 1, "main.xml is read once");
    assert.equal(abandoned.count, RELOAD_ABANDONED_READS_MAX);
    assert.deepEqual(rt.automation!.automationVersion(), before, "the tree in force is kept");
  } finally {
    recorder.stop();
    await rt.stop();
  }
});

for (const hung of ["main.xml", "idle.xml"] as const) {
  Deno.test(`a reload whose read of ${hung} hangs applies the rest of the configuration and fails only the tree section, naming the file`, async () => {
    const reads = new TreeReads();
    const clock = new ManualClock();
    const { rt, main, idle, file } = await rig(reads, clock, new AbandonedReloadReads());
    const recorder = recordEvents(rt);
    try {
      const before = rt.automation!.automationVersion();
      assert.ok(before !== null, "the tree is loaded");
      // The rest of the edit: a live key (applied in place).
      await Deno.writeTextFile(
        file,
        `${await Deno.readTextFile(file)}http:\n  auth_token: ${TOKEN}\n`,
      );
      const path = hung === "main.xml" ? main : idle;
      reads.hangs = path;
      const reloading = rt.reloader!.request();
      await waitFor(`the reload's read of ${hung}`, () => reads.hung > 0);
      clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
      await reloading;
      const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
      assert.deepEqual(
        events.map((e) => [e.result, e.errors, e.refused.length]),
        [["applied", [], 1]],
        JSON.stringify(events),
      );
      const refused = events[0]!.refused[0]!;
      const cannot = hung === "main.xml"
        ? `${main}: error: cannot read behavior tree file`
        : `cannot read included file ${idle}`;
      assert.ok(refused.startsWith("automation.behavior_tree: "), refused);
      assert.ok(
        refused.includes(
          `${cannot}: no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms ` +
            "(a hung mount or a failing disk?)",
        ),
        refused,
      );
      assert.ok(events[0]!.summary.includes("applied: http.auth_token"), events[0]!.summary);
      assert.deepEqual(rt.automation!.automationVersion(), before, "the tree in force is kept");
    } finally {
      recorder.stop();
      await rt.stop();
    }
  });
}
