/**
 * A provider id may hold ": " (the config refuses only "/", "." and ".."), and a failed start is
 * reported `id: why`: the kernel takes a failed start's id from the registry's report
 * (each failed start's id carried apart from its why), never from the text before the first ":". And the AUTO refusal of a providers
 * section names the ids it holds back, failed to start or dropped cut (namedProviderId), as the
 * summary names them: a 10 kB id makes no 10 kB reason.
 */
import assert from "node:assert/strict";
import { QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig, withUnstartable } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { automationConfig, enterAuto, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

const COLON = "a: b";

Deno.test('Kernel.reload failing to restart a provider whose id holds ": " notes the alarm on it as on a provider not running', async () => {
  // Parsed with a plain id, then moved to COLON (a flow mapping cannot hold it unquoted).
  const parsed = alarmsConfig(
    "alarms:\n  - { id: colon_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500 }\n",
    ["sim0", "sim1"],
  );
  const alarms = parsed.alarms.map((a) => ({
    ...a,
    providerId: COLON,
    signal: `${COLON}/tempctl0/tc1_temp`,
  }));
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0"), simProvider(COLON)], alarms }),
    { arm: true },
  );
  try {
    await waitFor("a: b sampled", () => rt.alarms.alarm("colon_hot").quality === "OK", 5000);
    const report = await rt.reload(withUnstartable(rt.config, COLON));
    assert.deepEqual(report.providers.failed.map((f) => f.id), [COLON]);
    assert.ok(
      report.notes.some((n) =>
        n.startsWith(
          `alarms on provider(s) not running (${COLON}: failed to start), their input bad: colon_hot`,
        )
      ),
      JSON.stringify(report.notes),
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload in AUTO names the providers it holds back, failed to start and no longer lists by their ids cut", async () => {
  const held = `h${"p".repeat(10_000)}`;
  const broken = `f: "${"q".repeat(10_000)}`;
  const cut = (id: string) => `${id.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree);
    const rt = await startRuntime({
      ...base,
      providers: [...base.providers, simProvider(held)],
    });
    try {
      await enterAuto(rt);
      assert.equal(rt.modes.current(), "AUTO");
      const sim0 = rt.config.providers.find((p) => p.id === "sim0")!;
      // The held provider removed (held back in AUTO), one added that cannot start.
      const first = await rt.reload({
        ...rt.config,
        providers: [sim0, { ...sim0, id: broken, command: "/nonexistent/provider" }],
      });
      assert.deepEqual(report(first.refused), [
        `providers: mode is AUTO: removal or change of ${cut(held)} held back; ` +
        `failed to start: ${cut(broken)}: cannot start provider '${cut(broken)}' ` +
        `("/nonexistent/provider"): ${
          first.providers.failed[0]!.why.split(`("/nonexistent/provider"): `)[1]
        }`,
      ]);
      assert.ok(first.refused[0]!.why.length < 1000, `${first.refused[0]!.why.length} chars`);
      // The one that failed to start no longer in the file: dropped, said in the note.
      const second = await rt.reload({ ...rt.config, providers: [sim0] });
      assert.ok(
        second.notes.includes(`no longer listed (failed to start before): ${cut(broken)}`),
        JSON.stringify(second.notes).slice(0, 2000),
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

function report(refused: readonly { section: string; why: string }[]): string[] {
  return refused.map((r) => `${r.section}: ${r.why}`);
}
