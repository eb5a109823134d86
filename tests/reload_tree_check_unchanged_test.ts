/**
 * A reload (SIGHUP) checks the behavior tree of the re-read configuration (main.ts configReload).
 * It parsed and verified the tree at every reload, though neither the tree's files nor the
 * declared parameters it is judged by had changed -- and within one check it parsed the files
 * once per level of includes (to find them) and once more to verify them. The reload's
 * TreeChecks now answers a tree whose files read with the last check's texts, against the same
 * declared parameters, with the last check's diagnostics; any changed input is checked in full,
 * from the parse that found the last includes. Real files and the host's reads; the parses and
 * verifies counted through TreeCheckSteps.
 */
import assert from "node:assert/strict";
import type { ReloadedConfig } from "../src/app/mod.ts";
import { TreeChecks } from "../src/automation/bt/mod.ts";
import { parseBehaviorTree, verifyParsedTreeFile } from "../src/automation/bt/mod.ts";
import { systemClock } from "../src/host/clock.ts";
import { commandOnPath, readRegularFile, statPath } from "../src/host/mod.ts";
import { configReload } from "../src/main.ts";
import { tempDir } from "./helpers/kernel.ts";
import { simRuntimeConfig } from "./helpers/sim_config.ts";

/** The main tree: reads the parameter `target` as a double and includes idle.xml. */
const MAIN_TREE = `<root BTCPP_format="4" main_tree_to_execute="Main">\n` +
  `  <include path="idle.xml" />\n` +
  `  <BehaviorTree ID="Main"><Sequence><GetParameter param="target" value="{t}" />` +
  `<SubTree ID="Idle" /></Sequence></BehaviorTree>\n</root>\n`;

/** No BTCPP_format: a warning, which every reload that checks the tree says. */
const idleTree = (msec: number) =>
  `<root>\n  <BehaviorTree ID="Idle"><Sleep msec="${msec}" /></BehaviorTree>\n</root>\n`;

/** The configuration: automation on, main.xml, `target` declared of type `type`. */
const runtimeYaml = (dir: string, type: string, extra = "") =>
  `runtime:\n  name: rig\n  data_dir: ${dir}/data\n${simRuntimeConfig()}` +
  `automation:\n  enabled: true\n  behavior_tree: main.xml\n  parameters:\n` +
  `    - { name: target, type: ${type}, default: ${type === "string" ? '"a"' : "40"} }\n` +
  extra;

/** The reload of a folder's runtime.yaml, with its tree checks' parses and verifies counted. */
async function rig() {
  const dir = tempDir("runtime-reload-tree-check-");
  const file = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(`${dir}/main.xml`, MAIN_TREE);
  await Deno.writeTextFile(`${dir}/idle.xml`, idleTree(1000));
  await Deno.writeTextFile(file, runtimeYaml(dir, "double"));
  const counts = { parses: 0, verifies: 0 };
  const treeChecks = new TreeChecks({
    parse: (path, readFile) => {
      counts.parses++;
      return parseBehaviorTree(path, readFile);
    },
    verify: (parse, parameters) => {
      counts.verifies++;
      return verifyParsedTreeFile(parse, parameters);
    },
  });
  const reload = configReload(
    file,
    { file, logLevel: null },
    { port: null, logLevel: null },
    { logLevel: "info", automationEnabled: true },
    { clock: systemClock, readRegularFile, stat: statPath, commandOnPath, treeChecks },
  );
  /** One reload's check, and the parses and verifies it took. */
  const check = async (): Promise<{ got: ReloadedConfig; parses: number; verifies: number }> => {
    counts.parses = 0;
    counts.verifies = 0;
    const got = await reload();
    return { got, ...counts };
  };
  return { dir, file, check };
}

/** The lines of a reload's result that are about a tree file. */
function treeLines(got: ReloadedConfig): string[] {
  const lines = got.ok ? got.warnings : [...got.errors, ...(got.warnings ?? [])];
  return lines.filter((l) => l.includes(".xml"));
}

Deno.test("a reload of an unchanged behavior tree neither parses nor verifies it again, and says its warnings again; a first check parses once per level of includes", async () => {
  const { dir, file, check } = await rig();
  const first = await check();
  assert.ok(first.got.ok, JSON.stringify(first.got));
  // main.xml, then idle.xml (found by the first parse): the second parse is the one verified.
  assert.deepEqual([first.parses, first.verifies], [2, 1]);
  const warnings = treeLines(first.got);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  assert.ok(warnings[0]!.includes("idle.xml") && warnings[0]!.includes("BTCPP_format"));
  const again = await check();
  assert.ok(again.got.ok, JSON.stringify(again.got));
  assert.deepEqual([again.parses, again.verifies], [0, 0], "nothing it depends on changed");
  assert.deepEqual(treeLines(again.got), warnings, "the tree's warnings are said again");
  // Another key of the file edited (not one the tree's check reads): still not checked again.
  await Deno.writeTextFile(
    file,
    runtimeYaml(dir, "double", "http:\n  auth_token: reload-test-token-0123456789abcdef\n"),
  );
  const edited = await check();
  assert.ok(edited.got.ok, JSON.stringify(edited.got));
  assert.deepEqual([edited.parses, edited.verifies], [0, 0]);
  assert.deepEqual(treeLines(edited.got), warnings);
});

Deno.test("a reload whose declared parameters or included file changed checks the tree again and refuses one that no longer verifies", async () => {
  const { dir, file, check } = await rig();
  assert.ok((await check()).got.ok);
  // `target` now a string: GetParameter reads a double, so the same files no longer verify.
  await Deno.writeTextFile(file, runtimeYaml(dir, "string"));
  const retyped = await check();
  assert.equal(retyped.got.ok, false, JSON.stringify(retyped.got));
  assert.deepEqual([retyped.parses, retyped.verifies], [1, 1], "the same files: one parse");
  assert.ok(
    treeLines(retyped.got).some((l) => l.includes("main.xml") && l.includes("target")),
    JSON.stringify(retyped.got),
  );
  // Declared as the tree reads it again: checked again (the last check judged another type).
  await Deno.writeTextFile(file, runtimeYaml(dir, "double"));
  const back = await check();
  assert.ok(back.got.ok, JSON.stringify(back.got));
  assert.deepEqual([back.parses, back.verifies], [1, 1]);
  // The included file edited into one that does not verify: parsed again, refused naming it.
  await Deno.writeTextFile(`${dir}/idle.xml`, idleTree(1000).replace("Sleep", "NoSuchNode"));
  const broken = await check();
  assert.equal(broken.got.ok, false, JSON.stringify(broken.got));
  assert.deepEqual([broken.parses, broken.verifies], [1, 1], "main.xml the same: idle.xml parsed");
  assert.ok(
    treeLines(broken.got).some((l) => l.includes("idle.xml") && l.includes("NoSuchNode")),
    JSON.stringify(broken.got),
  );
  // And the same broken files again: refused again, from the last check's diagnostics.
  const still = await check();
  assert.equal(still.got.ok, false);
  assert.deepEqual(treeLines(still.got), treeLines(broken.got));
  assert.deepEqual([still.parses, still.verifies], [0, 0]);
});
