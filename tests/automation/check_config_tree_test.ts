/** `--check-config` and `--config` verify the configured behavior tree (with includes). */
import assert from "node:assert/strict";
import { runCli, safetySection, withFiles } from "../helpers/cli.ts";

const REPO = new URL("../../", import.meta.url).pathname;

const config = (enabled: boolean) =>
  `providers: [{id: sim0, command: deno}]
automation:
  enabled: ${enabled}
  behavior_tree: bt/main.xml
  mode_transition_hooks:
    before_transition:
      - { from: AUTO, to: FAULT, calls: [{ device_handle: sim0/motorctl0, function_name: stop }] }
${safetySection("sim0/motorctl0")}`;

// Line 4: unknown node type; sub.xml line 3: CallDevice without its required function_name.
const MAIN_XML = `<root BTCPP_format="4" main_tree_to_execute="Main">
  <include path="sub.xml" />
  <BehaviorTree ID="Main">
    <Sequence><Blink /><SubTree ID="Sub" _autoremap="true" /></Sequence>
  </BehaviorTree>
</root>
`;
const SUB_XML = `<root BTCPP_format="4">
  <BehaviorTree ID="Sub">
    <CallDevice device_handle="sim0/motorctl0" />
  </BehaviorTree>
</root>
`;
const BROKEN = { "cfg.yaml": config(true), "bt/main.xml": MAIN_XML, "bt/sub.xml": SUB_XML };

Deno.test("--check-config accepts the shipped demo configuration and its tree", async () => {
  const r = await runCli(["--check-config", "examples/demo.yaml"], { cwd: REPO });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.stdout.trim(), "examples/demo.yaml: 0 errors, 0 warnings");
});

Deno.test("--check-config reports behavior tree diagnostics of the file and its includes and exits 1", async () => {
  await withFiles(BROKEN, async (dir) => {
    const r = await runCli(["--check-config", "cfg.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines.length, 3, r.stdout);
    const [main, sub] = lines.slice(0, 2).sort();
    assert.match(main!, /^bt\/main\.xml:4:15: error: .*Blink/);
    assert.match(sub!, /^bt\/sub\.xml:3:5: error: .*function_name/);
    assert.equal(lines[2], "cfg.yaml: 2 errors, 0 warnings");
  });
});

Deno.test("--check-config --format json counts behavior tree diagnostics", async () => {
  await withFiles(BROKEN, async (dir) => {
    const r = await runCli(["--check-config", "cfg.yaml", "--format", "json"], { cwd: dir });
    assert.equal(r.code, 1);
    const report = JSON.parse(r.stdout);
    assert.equal(report.valid, false);
    assert.equal(report.errors, 2);
    assert.deepEqual(
      report.diagnostics.map((d: { file: string; line: number }) => [d.file, d.line]).sort(),
      [["bt/main.xml", 4], ["bt/sub.xml", 3]],
    );
  });
});

Deno.test("--config refuses to start with behavior tree errors and exits 1", async () => {
  await withFiles(BROKEN, async (dir) => {
    const r = await runCli(["--config", "cfg.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /bt\/main\.xml:4:15: error: /);
    assert.match(r.stderr, /bt\/sub\.xml:3:5: error: /);
    assert.match(r.stderr, /refusing to start: cfg\.yaml: 2 errors/);
  });
});

Deno.test("--check-config does not verify the tree while automation is disabled", async () => {
  await withFiles({ ...BROKEN, "cfg.yaml": config(false) }, async (dir) => {
    const r = await runCli(["--check-config", "cfg.yaml"], { cwd: dir });
    assert.equal(r.code, 0, r.stdout);
    assert.equal(r.stdout.trim(), "cfg.yaml: 0 errors, 0 warnings");
  });
});

Deno.test("--check-config reports a GetParameter name the configuration does not declare", async () => {
  const tree = `<root BTCPP_format="4">
  <BehaviorTree ID="Main">
    <GetParameter param="target_tmp" value="{t}" />
  </BehaviorTree>
</root>
`;
  const cfg = config(true).replace(
    "  behavior_tree: bt/main.xml\n",
    "  behavior_tree: bt/main.xml\n  parameters:\n    - { name: target_temp, type: double, default: 40 }\n",
  );
  await withFiles({ "cfg.yaml": cfg, "bt/main.xml": tree }, async (dir) => {
    const r = await runCli(["--check-config", "cfg.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^bt\/main\.xml:3:5: error: .*"target_tmp" is not a declared parameter \(automation\.parameters\) \(did you mean "target_temp"\?\)$/m,
    );
  });
});

Deno.test("--check-config refuses a tree that includes a FIFO instead of waiting on it for ever", async () => {
  await withFiles({ "cfg.yaml": config(true), "bt/main.xml": MAIN_XML }, async (dir) => {
    const fifo = await new Deno.Command("mkfifo", { args: [`${dir}/bt/sub.xml`] }).output();
    assert.ok(fifo.success, "mkfifo");
    // Killed (code -1) if it still reads the FIFO after 20 s: a read without a writer never ends.
    const r = await runCli(["--check-config", "cfg.yaml"], { cwd: dir, killAfterMs: 20_000 });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^bt\/main\.xml:2:3: error: cannot read included file .*sub\.xml: not a regular file \(a FIFO\)$/m,
    );
  });
});
