import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { inertSim } from "../safety/_fixture.ts";

Deno.test("probe", async () => {
  await using r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1")],
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, command: "/nonexistent/provider" }],
  });
  console.log(JSON.stringify(report.providers));
  const s = rt.estop.status();
  console.log(JSON.stringify(s.unverified_reasons.filter((u) => u.device_handle.startsWith("sim1/"))));
  console.log(JSON.stringify(s.plan.uncovered.filter((u) => u.device_handle.startsWith("sim1/"))));
  console.log(rt.registry.host("sim1")?.lifecycle, rt.registry.host("sim1")?.startError);
  assert.ok(true);
});
