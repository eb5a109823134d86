/**
 * A CallDevice argument that is no finite double (`1e400`, `-1e400`: valid JSON syntax that
 * JSON.parse reads as +/-Infinity) is refused before any call, as POST /v0/call refuses such a
 * number at parsing and the Sparkplug node refuses it (docs/sparkplug.md): a double argument the
 * provider declares without bounds would otherwise reach it as Infinity, and the audit trail
 * would record its value as null (JSON has no Infinity).
 */
import { strictEqual as equal } from "node:assert/strict";
import { parseCallArgs } from "../../../src/automation/bt/mod.ts";
import { buildXml, FakeServices, xmlRoot } from "./_helpers.ts";

for (const text of [`{"rate": 1e400}`, `{"rate": -1e400}`, `json:{"ok": 1, "rate": 1E999}`]) {
  Deno.test(`parseCallArgs refuses ${text}: no finite double`, () => {
    const r = parseCallArgs(text);
    equal(r.ok, false, JSON.stringify(r, (_k, v) => typeof v === "number" ? String(v) : v));
    if (!r.ok) equal(/arg 'rate': .*not a finite double/.test(r.error), true, r.error);
  });
}

Deno.test("CallDevice with an args entry holding 1e400 fails without calling", () => {
  const s = new FakeServices();
  const t = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><CallDevice device_handle="d/x" function_name="f" args="{a}" ` +
        `success="{ok}" error="{err}"/></BehaviorTree>`,
    ),
    { services: s },
  );
  t.blackboard.set("a", { type: "string", value: `{"rate": 1e400}` });
  equal(t.tickRoot(), "FAILURE");
  equal(s.calls.length, 0);
  equal(/not a finite double/.test(String(t.blackboard.get("err")?.value)), true);
});
