/** GET /metrics counts behavior-tree ticks and the ticks that threw (the runtime's own engine). */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { automationOptions, enterAuto, TreeDir, treeXml } from "./automation_helpers.ts";

Deno.test("GET /metrics runtime_bt_ticks_total and runtime_bt_tick_errors_total follow the tree's ticks", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "throwing.xml",
      treeXml(`<Sequence>
      <Sleep msec="150" />
      <Script code="level := undefined_variable + 1; undefined_variable := 0" />
    </Sequence>`),
    );
    const fx = await startHttpFixture({ config: automationOptions(tree) });
    try {
      const scrape = async () => parsePrometheusText((await fx.request("GET", "/metrics")).text);
      const idle = await scrape();
      assert.equal(sampleValue(idle, "runtime_bt_ticks_total"), 0);
      assert.equal(sampleValue(idle, "runtime_bt_tick_errors_total"), 0);
      await enterAuto(fx.runtime);
      await waitFor("FAULT", () => fx.runtime.modes.current() === "FAULT");
      const after = await scrape();
      const ticks = fx.runtime.automation!.status().engine_diagnostics.total_ticks;
      assert.ok(ticks > 1, `ticks while sleeping, then the one that threw: ${ticks}`);
      assert.equal(sampleValue(after, "runtime_bt_ticks_total"), ticks);
      assert.equal(sampleValue(after, "runtime_bt_tick_errors_total"), 1);
      assert.equal(sampleValue(after, "runtime_mode", { mode: "FAULT" }), 1);
    } finally {
      await fx.close();
    }
  } finally {
    await dir.dispose();
  }
});
