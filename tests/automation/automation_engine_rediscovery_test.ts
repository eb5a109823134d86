/**
 * A provider restart in AUTO that changes the policy of a function the tree calls literally: the
 * restart takes the provider down first, so the device-loss latch forces FAULT before the new
 * inventory is known (the tree depends on every device it names), and re-arming is judged by AUTO's
 * arm check against the new policy. The new inventory's refusal is said once when it is known (one
 * WARN line per call, naming the provider, the call and the policy) and in status'
 * `why_not_running`, also for a restart a configuration reload makes outside AUTO. Over a real
 * kernel with sim0 (the AUTO -> FAULT hook) and the programmable provider p0 (in-process,
 * restarted by its supervisor or a reload) reading its inventory from a file at each start.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { httpReservedFds, readRegularFile, serveHttp } from "../../src/host/mod.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** The literal calls of the generated tree of the bound's test (more than the bound). */
const TREE_CALLS = 50;

/** The WARN lines that say a call of the tree refused in AUTO by p0's new inventory. */
function refusedLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("behavior tree: inventory of p0 changed"));
}

/** p0/act declares `set_x` (ACTUATE) with `policy` added to its category. */
function inventory(policy: Record<string, unknown>): Inventory {
  return {
    devices: {
      act: {
        signals: [],
        functions: [{
          function_id: 9,
          name: "set_x",
          policy: { category: 3, ...policy },
          args: [],
        }],
      },
    },
  };
}

/** The tree's literal call. */
const CALL_SET_X = `<CallDevice device_handle="p0/act" function_name="set_x" />`;

/** CALL_SET_X, then a 20 ms Sleep: a tree whose ticks a test can wait for in AUTO. */
const TICKING_CALL_SET_X = `<Sequence>
      ${CALL_SET_X}
      <Sleep msec="20" />
    </Sequence>`;

/** Writes the tree `call.xml` (`body`) in `dir`; returns its path. */
function writeCallTree(dir: TreeDir, body = CALL_SET_X): Promise<string> {
  return dir.write("call.xml", treeXml(body));
}

/** Writes p0's inventory file `p0.json` in `dir` (read at each start of p0); returns its path. */
async function writeP0Inventory(dir: TreeDir, inv: Inventory): Promise<string> {
  const invFile = `${dir.path}/p0.json`;
  await Deno.writeTextFile(invFile, JSON.stringify(inv));
  return invFile;
}

/**
 * sim0 and p0 (reading its inventory from `p0.json` in `dir`, first `first`; `p0Options` its
 * entry's, e.g. a supervisor), armed, with `tree`: the kernel, p0's entry to restart it with and
 * its inventory file.
 */
async function p0Rig(
  dir: TreeDir,
  tree: string,
  first: Inventory = inventory({}),
  p0Options: Parameters<typeof programmableProvider>[2] = {},
) {
  const invFile = await writeP0Inventory(dir, first);
  const p0 = programmableProvider("p0", invFile, p0Options);
  const r = await rig({
    config: automationConfig(tree, { config: { providers: [simProvider("sim0"), p0] } }),
    arm: true,
  });
  return { r, p0, invFile };
}

/** Requests AUTO on `r`'s kernel and waits for the tree ticking; returns the engine. */
async function autoTicking(r: Rig) {
  const engine = r.kernel.automation!;
  await r.kernel.modes.request("AUTO");
  await waitFor("the tree ticking", () => engine.status().engine_diagnostics.total_ticks > 2);
  return engine;
}

/** The policy p0's inventory declares now for p0/act set_x (undefined: not declared). */
function setXPolicy(r: Rig) {
  return r.kernel.inventory.capabilities("p0", "act")?.functions.find((f) => f.name === "set_x")
    ?.policy;
}

/** Reloads `r`'s kernel with p0's entry changed (its timeout): p0 is restarted. */
async function restartByReload(r: Rig, p0: ProviderConfig): Promise<void> {
  const rt = r.kernel;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...p0, timeoutMs: p0.timeoutMs + 1000 }],
  });
  assert.deepEqual(report.providers.restarted, ["p0"]);
}

Deno.test("AutomationEngine: a restart in AUTO that makes the tree's literal call one AUTO refuses (requires_lease) forces FAULT, says the call once, and AUTO stays refused", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await writeCallTree(dir, TICKING_CALL_SET_X);
    const { r: started, invFile } = await p0Rig(dir, tree, inventory({}), { restart: {} });
    await using r = started;
    const rt = r.kernel;
    const engine = await autoTicking(r);
    // The next process declares set_x requires_lease: no call of the tree may pass in AUTO.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ requires_lease: true })));
    r.kill("p0");
    const leased = () => setXPolicy(r)?.requiresLease === true;
    await waitFor("p0 back with set_x requires_lease", leased);
    assert.equal(rt.modes.current(), "FAULT", "AUTO runs a tree whose call is refused every tick");
    assert.equal(engine.status().not_running?.cause, "device_loss_latch");
    assert.deepEqual(engine.status().refused_calls, [], "no call of the tree refused in AUTO");
    // Said once, when the new inventory is known: the provider, the call and the policy.
    const said = refusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: inventory of p0 changed: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused: "p0\/act" "set_x" requires a lease \(provider policy requires_lease\)/,
    );
    // Where the API says why the tree does not run, with the remedy the device-loss latch needs.
    assert.match(
      engine.status().why_not_running ?? "",
      /^device-loss latch: p0\/act was lost .*; refusing AUTO: the behavior tree calls p0\/act set_x \(.*requires_lease/,
    );
    // Re-armed once the FAULT hooks have run (the mode manager refuses it while they run).
    await waitFor("re-armed to MANUAL", async () => {
      try {
        await rt.modes.request("MANUAL");
        return true;
      } catch (err) {
        if (/still running/.test(String(err))) return false;
        throw err;
      }
    });
    await assert.rejects(
      rt.modes.request("AUTO"),
      /refusing AUTO: the behavior tree calls p0\/act set_x \(.*lease/,
    );
    // A restart that rediscovers the same inventory says nothing new.
    const pid = r.kill("p0");
    await waitFor("p0 back with the same inventory", () => {
      const host = rt.registry.host("p0");
      return host?.available === true && host.session?.pid !== pid;
    });
    assert.equal(refusedLines(r.lines).length, 1, r.lines.join("\n"));
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a reload restarting a provider outside AUTO whose new inventory keeps the tree's literal call out of AUTO (allowed_modes) says the call once", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await writeCallTree(dir);
    const { r: started, p0, invFile } = await p0Rig(dir, tree);
    await using r = started;
    const rt = r.kernel;
    assert.deepEqual(refusedLines(r.lines), [], "start-up: the call runs in AUTO");
    // The file changes p0's entry (restarted), whose next process allows set_x in MANUAL only.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ allowed_modes: ["MANUAL"] })));
    await restartByReload(r, p0);
    assert.equal(rt.modes.current(), "MANUAL");
    const said = refusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: inventory of p0 changed: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused in AUTO mode: "p0\/act" "set_x" is allowed only in "MANUAL" \(provider policy allowed_modes\)\)$/,
    );
    assert.match(
      rt.automation!.status().why_not_running ?? "",
      /^mode is MANUAL: .*; refusing AUTO: the behavior tree calls p0\/act set_x \(.*allowed_modes\)/,
    );
    await assert.rejects(
      rt.modes.request("AUTO"),
      /refusing AUTO: .*p0\/act set_x .*allowed_modes/,
    );
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a restart whose new inventory refuses many literal calls of the tree names up to MAX_REFUSED_TREE_CALL_LINES (src/app/kernel.ts) of them and counts the rest in one line", async () => {
  const dir = await TreeDir.create();
  try {
    // A generated tree: more calls than the bound, each with its own args (a function no longer
    // declared is refused per call).
    const calls = Array.from(
      { length: TREE_CALLS },
      (_, k) =>
        `      <CallDevice device_handle="p0/act" function_name="set_x" ` +
        `args="json:{&quot;n&quot;:${k}}" />\n`,
    );
    const tree = await dir.write(
      "many.xml",
      treeXml(`<Sequence>\n${calls.join("")}    </Sequence>`),
    );
    const { r: started, p0, invFile } = await p0Rig(dir, tree);
    await using r = started;
    // p0's next process declares set_y instead of set_x.
    await Deno.writeTextFile(
      invFile,
      JSON.stringify(inventory({})).replace(`"set_x"`, `"set_y"`),
    );
    await restartByReload(r, p0);
    const said = refusedLines(r.lines);
    assert.ok(said.length < TREE_CALLS, `a line for each of the ${said.length} calls`);
    // The bound's line: the rest counted, the bound named (MAX_REFUSED_TREE_CALL_LINES).
    const last = said.at(-1)!.match(
      /^WARN .*behavior tree: inventory of p0 changed: and (\d+) more call\(s\) of the tree refused in AUTO \(named up to (\d+): MAX_REFUSED_TREE_CALL_LINES; /,
    );
    assert.ok(last !== null, said.at(-1));
    const named = Number(last[2]);
    assert.equal(said.length, named + 1, said.join("\n"));
    assert.equal(Number(last[1]), TREE_CALLS - named);
    assert.match(said[0]!, /tree calls p0\/act set_x at .*many\.xml:\d+:\d+ \(Function not found/);
  } finally {
    await dir.dispose();
  }
});

/** Every WARN line that says a call of the tree refused in AUTO, whatever brought it. */
function allRefusedLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("entering AUTO is refused while the tree calls"));
}

Deno.test("AutomationEngine: a tree whose literal call a provider's policy keeps out of AUTO from start-up says the call once at start-up", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await writeCallTree(dir);
    const { r: started } = await p0Rig(dir, tree, inventory({ allowed_modes: ["MANUAL"] }));
    await using r = started;
    const said = allRefusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: at start-up: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused in AUTO mode: "p0\/act" "set_x" is allowed only in "MANUAL" \(provider policy allowed_modes\)\)$/,
    );
    await assert.rejects(
      r.kernel.modes.request("AUTO"),
      /refusing AUTO: .*p0\/act set_x .*allowed_modes/,
    );
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a reload that swaps in a tree whose literal call a provider's policy keeps out of AUTO says the call once, also when it restarts that provider", async () => {
  const dir = await TreeDir.create();
  try {
    const idle = await dir.write("idle.xml", treeXml(`<Sleep msec="20" />`));
    const calling = await writeCallTree(dir);
    const { r: started, p0 } = await p0Rig(dir, idle, inventory({ allowed_modes: ["MANUAL"] }));
    await using r = started;
    const rt = r.kernel;
    assert.deepEqual(allRefusedLines(r.lines), [], "start-up: the tree calls nothing");
    // The tree swapped in, and p0's entry changed by the same file (restarted).
    const report = await rt.reload({
      ...rt.config,
      automation: { ...rt.config.automation, behaviorTree: calling },
      providers: [rt.config.providers[0]!, { ...p0, timeoutMs: p0.timeoutMs + 1000 }],
    });
    assert.ok(report.applied.includes("automation.behavior_tree"), JSON.stringify(report));
    assert.deepEqual(report.providers.restarted, ["p0"]);
    const said = allRefusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: reloaded: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused in AUTO mode: "p0\/act" "set_x" is allowed only in "MANUAL" \(provider policy allowed_modes\)\)$/,
    );
    // A reload that swaps in the tree alone says it too.
    const back = await rt.reload({
      ...rt.config,
      automation: { ...rt.config.automation, behaviorTree: idle },
    });
    assert.ok(back.applied.includes("automation.behavior_tree"), JSON.stringify(back));
    await rt.reload({
      ...rt.config,
      automation: { ...rt.config.automation, behaviorTree: calling },
    });
    assert.equal(allRefusedLines(r.lines).length, 2, r.lines.join("\n"));
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a provider whose change a reload holds back in AUTO, restarted by its supervisor during that reload with a declaration that keeps the tree's call out of AUTO, has the call said once at the reload's end", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await writeCallTree(dir, TICKING_CALL_SET_X);
    // p1, which the reload adds, never answers Hello: the reload waits in its providers section.
    const p1File = `${dir.path}/p1.json`;
    await Deno.writeTextFile(p1File, JSON.stringify({ hello: { hang: true }, devices: {} }));
    const { r: started, p0, invFile } = await p0Rig(dir, tree, inventory({}), { restart: {} });
    await using r = started;
    const rt = r.kernel;
    await autoTicking(r);
    // In AUTO: p0's change is held back, p1 is added (its start waits).
    const reloading = rt.reload({
      ...rt.config,
      providers: [
        rt.config.providers[0]!,
        { ...p0, timeoutMs: p0.timeoutMs + 1000 },
        programmableProvider("p1", p1File),
      ],
    });
    const p1Process = () => r.fakes!.running().find((p) => p.args.includes(p1File));
    await waitFor("p1 starting", () => p1Process() !== undefined);
    // Meanwhile p0 crashes; its supervisor brings it back declaring set_x requires_lease.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ requires_lease: true })));
    r.kill("p0");
    await waitFor(
      "p0 back with set_x requires_lease",
      () => setXPolicy(r)?.requiresLease === true,
    );
    // p1's start ends (its process gone): the reload ends.
    p1Process()!.kill("SIGKILL");
    const report = await reloading;
    assert.deepEqual(report.providers.held, ["p0"], JSON.stringify(report));
    assert.deepEqual(report.providers.restarted, []);
    assert.equal(rt.modes.current(), "FAULT");
    const said = refusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(said[0]!, /tree calls p0\/act set_x \(Call refused: .*requires_lease/);
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a provider a reload planned to restart, crash-restarted meanwhile while the reload's providers section is refused, has its new inventory's refusal said once", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await writeCallTree(dir);
    const invFile = await writeP0Inventory(dir, inventory({}));
    const p0 = programmableProvider("p0", invFile, { restart: {} });
    // The reload's read of the tree waits for the test: the reload is still running meanwhile.
    let gated = false;
    const gate = Promise.withResolvers<void>();
    const asked = Promise.withResolvers<void>();
    const config = automationConfig(tree, { config: { providers: [simProvider("sim0"), p0] } });
    await using r = await rig({
      config,
      arm: true,
      host: {
        // Room for the two providers configured at start, not for a third.
        serve: (o) =>
          serveHttp({
            ...o,
            openFileLimit: config.http.maxConnections + httpReservedFds(2),
          }),
        readRegularFile: async (path, maxBytes) => {
          if (gated && path === tree) {
            asked.resolve();
            await gate.promise;
          }
          return await readRegularFile(path, maxBytes);
        },
      },
    });
    const rt = r.kernel;
    assert.deepEqual(allRefusedLines(r.lines), [], "start-up: the call runs in AUTO");
    // The file changes p0's entry (to restart it) and adds p2: no room, the section is refused.
    gated = true;
    const reload = rt.reload({
      ...rt.config,
      providers: [
        rt.config.providers[0]!,
        { ...p0, timeoutMs: p0.timeoutMs + 1000 },
        programmableProvider("p2", invFile),
      ],
    });
    await asked.promise;
    // p0 crashes while the reload runs; its supervisor restarts it, allowing set_x in MANUAL only.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ allowed_modes: ["MANUAL"] })));
    r.kill("p0");
    await waitFor(
      "p0 back allowing set_x in MANUAL only",
      () => setXPolicy(r)?.allowedModes?.length === 1,
    );
    gate.resolve();
    const report = await reload;
    assert.deepEqual(report.refused.map((x) => x.section), ["providers"], JSON.stringify(report));
    assert.deepEqual(report.providers.restarted, []);
    const said = allRefusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: inventory of p0 changed: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused in AUTO mode: .*allowed_modes/,
    );
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a reload restarting several providers whose new inventories refuse many literal calls of the tree names up to MAX_REFUSED_TREE_CALL_LINES of them across the providers and counts the rest in one line", async () => {
  const dir = await TreeDir.create();
  try {
    // Calls to p0's and p1's act, each provider fewer than the bound, both together more.
    const per = 15;
    const calls = ["p0", "p1"].flatMap((p) =>
      Array.from(
        { length: per },
        (_, k) =>
          `      <CallDevice device_handle="${p}/act" function_name="set_x" ` +
          `args="json:{&quot;n&quot;:${k}}" />\n`,
      )
    );
    const tree = await dir.write(
      "two.xml",
      treeXml(`<Sequence>\n${calls.join("")}    </Sequence>`),
    );
    const files = { p0: `${dir.path}/p0.json`, p1: `${dir.path}/p1.json` };
    for (const f of Object.values(files)) {
      await Deno.writeTextFile(f, JSON.stringify(inventory({})));
    }
    const p0 = programmableProvider("p0", files.p0);
    const p1 = programmableProvider("p1", files.p1);
    await using r = await rig({
      config: automationConfig(tree, { config: { providers: [simProvider("sim0"), p0, p1] } }),
      arm: true,
    });
    // Both next processes declare set_y instead of set_x; one reload restarts both.
    for (const f of Object.values(files)) {
      await Deno.writeTextFile(f, JSON.stringify(inventory({})).replace(`"set_x"`, `"set_y"`));
    }
    const rt = r.kernel;
    const report = await rt.reload({
      ...rt.config,
      providers: [
        rt.config.providers[0]!,
        { ...p0, timeoutMs: p0.timeoutMs + 1000 },
        { ...p1, timeoutMs: p1.timeoutMs + 1000 },
      ],
    });
    assert.deepEqual(report.providers.restarted, ["p0", "p1"], JSON.stringify(report));
    const said = r.lines.filter((l) => /behavior tree: inventory of p[01] changed/.test(l));
    // One saying, one bound: the lines named across both providers, then the rest counted.
    const last = said.at(-1)!.match(
      /^WARN .*behavior tree: inventory of p1 changed: and (\d+) more call\(s\) of the tree refused in AUTO \(named up to (\d+): MAX_REFUSED_TREE_CALL_LINES; /,
    );
    assert.ok(last !== null, said.join("\n"));
    const named = Number(last[2]);
    assert.equal(said.length, named + 1, said.join("\n"));
    assert.equal(Number(last[1]), 2 * per - named);
    assert.equal(said.filter((l) => l.includes("inventory of p0 changed")).length, per);
  } finally {
    await dir.dispose();
  }
});
