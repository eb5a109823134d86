/**
 * POST /v0/mode over a real socket, against a runtime with the simulated provider as a child
 * process: when a mode listener supersedes the requested transition as it commits (FAULT forced on
 * entering AUTO: its after_transition hooks are skipped), the answer says so with
 * `superseded_by` (project addition) beside the anolis `mode`, and why with `superseded_reason`, the
 * reason FAULT was forced with, cut to SUPERSEDED_REASON_CHARS; a transition nothing supersedes
 * answers without either. The listener is the test's own, registered on the runtime's ModeManager as
 * the runtime's listeners are (an alarm, the device-loss latch).
 */
import assert from "node:assert/strict";
import { SUPERSEDED_REASON_CHARS } from "../../../src/control/mod.ts";
import { apiFetch } from "../../helpers/openapi_check.ts";
import { startHttpFixture } from "../../helpers/runtime_fixture.ts";
import { automationOptions, TreeDir, treeXml } from "../../scenarios/automation_helpers.ts";

Deno.test("POST /v0/mode AUTO a listener supersedes with AUTO->FAULT answers mode FAULT, superseded_by AUTO->FAULT and the FAULT's reason, cut; an unsuperseded one has neither", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const fx = await startHttpFixture({ config: automationOptions(tree) });
    try {
      const url = `http://127.0.0.1:${(await fx.serve()).port}`;
      const post = async (mode: string) => {
        const r = await apiFetch(`${url}/v0/mode`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ mode }),
        });
        return { status: r.status, json: await r.json() };
      };
      // Not superseded: no word of it.
      const manual = await post("MANUAL");
      assert.equal(manual.status, 200, JSON.stringify(manual.json));
      assert.equal(manual.json.mode, "MANUAL");
      assert.equal("superseded_by" in manual.json, false, JSON.stringify(manual.json));
      assert.equal("superseded_reason" in manual.json, false, JSON.stringify(manual.json));
      let forced: Promise<boolean> | null = null;
      let reason: string | null = "unsafe on entering AUTO";
      fx.runtime.modes.onModeChange(({ current }) => {
        if (reason !== null && current === "AUTO") {
          forced = fx.runtime.modes.forceFault(reason);
          reason = null;
        }
      });
      const auto = await post("AUTO");
      assert.ok(forced !== null, "the listener forced FAULT");
      assert.equal(await forced, true);
      assert.equal(auto.status, 200, JSON.stringify(auto.json));
      assert.equal(auto.json.status.code, "OK");
      assert.equal(auto.json.mode, "FAULT");
      assert.deepEqual(auto.json.hook_failures, []);
      assert.equal(auto.json.superseded_by, "AUTO->FAULT");
      assert.equal(auto.json.superseded_reason, "unsafe on entering AUTO");
      assert.equal(fx.runtime.modes.current(), "FAULT");
      // Leaving FAULT for MANUAL: nothing supersedes it.
      const back = await post("MANUAL");
      assert.equal(back.status, 200, JSON.stringify(back.json));
      assert.equal(back.json.mode, "MANUAL");
      assert.equal("superseded_by" in back.json, false, JSON.stringify(back.json));
      assert.equal("superseded_reason" in back.json, false, JSON.stringify(back.json));
      // A reason quoting a provider's text of any length is cut to the bound, marked.
      const said = `device-loss latch: sim/motor is down (${"z".repeat(SUPERSEDED_REASON_CHARS)})`;
      reason = said;
      forced = null;
      const long = await post("AUTO");
      assert.ok(forced !== null, "the listener forced FAULT again");
      assert.equal(await forced, true);
      assert.equal(long.status, 200, JSON.stringify(long.json));
      assert.equal(long.json.superseded_by, "AUTO->FAULT");
      assert.equal(long.json.superseded_reason, `${said.slice(0, SUPERSEDED_REASON_CHARS)}\u2026`);
      assert.equal((await post("MANUAL")).json.mode, "MANUAL");
      // The document served describes it, optional: the anolis members stay as they were.
      const doc = await (await apiFetch(`${url}/v0/openapi.json`)).json();
      const schema = doc.components.schemas.ModeResponse;
      assert.equal(schema.properties.superseded_by?.type, "string");
      assert.equal(schema.properties.superseded_reason?.type, "string");
      assert.deepEqual(schema.required, ["status", "mode"]);
    } finally {
      await fx.close();
    }
  } finally {
    await dir.dispose();
  }
});
