/**
 * The e-stop's ladder's call to a function that declares min_interval_ms counts as a sent call
 * (docs/http-api.md, "Provider policies": "They do count as sent calls, so an operator's call
 * right after a stop still keeps the provider's interval"). The provider (in-process, on the
 * provider SDK) declares `pulse` with an interval of ten minutes, which no test run reaches.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { refusedBeforeSending } from "../../src/control/mod.ts";
import { DeviceProvider } from "../../src/provider_sdk/mod.ts";
import type { ProgramHost } from "../helpers/in_process_provider.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { rig } from "../helpers/rig.ts";
import { call } from "./_fixture.ts";

const PULSER = "pulser-provider";
/** Longer than any test run: the interval never runs out here. */
const INTERVAL_MS = 600_000;

function pulserProgram(ran: string[]) {
  return (_host: ProgramHost) =>
    new DeviceProvider({ name: "pulser", version: "0.0.1" }, [{
      deviceId: "relay0",
      typeId: "test.relay",
      typeVersion: "1.0",
      label: "Relay that must not cycle fast",
      signals: [{
        id: "ok",
        name: "OK",
        type: "bool",
        pollHintHz: 2,
        staleAfterMs: 2000,
        read: () => true,
      }],
      functions: [{
        id: 1,
        name: "pulse",
        category: "ACTUATE",
        minIntervalMs: INTERVAL_MS,
        handler: () => void ran.push("pulse"),
      }],
    }]);
}

const pulser: ProviderConfig = {
  id: "pulser",
  command: PULSER,
  args: [],
  timeoutMs: 5000,
  helloTimeoutMs: 10000,
  readyTimeoutMs: 10000,
  restartPolicy: {
    enabled: false,
    maxAttempts: 3,
    backoffMs: [50],
    timeoutMs: 30000,
    successResetMs: 1000,
  },
};

Deno.test("Estop: the ladder's call counts as sent for min_interval_ms: the operator's call after the clear and re-arm is refused with 429", async () => {
  const ran: string[] = [];
  await using r = await rig({
    providers: [pulser],
    programs: { ...TEST_PROGRAMS, [PULSER]: pulserProgram(ran) },
    safety: { hooks: [call("pulser/relay0", "pulse")] },
    arm: true,
  });
  const rt = r.kernel;
  const manual = () =>
    rt.router.call({
      providerId: "pulser",
      deviceId: "relay0",
      functionName: "pulse",
      args: {},
      origin: "manual",
    }).catch((err: unknown) => err);
  // The ladder's pulse is the first one sent.
  const stop = await rt.estop.trigger("min interval");
  assert.deepEqual(stop.actions.map((a) => [a.function, a.success]), [["pulse", true]]);
  assert.deepEqual(ran, ["pulse"]);
  rt.estop.clear();
  await rt.modes.request("MANUAL");
  const e = await manual();
  assert.ok(e instanceof RuntimeError, `refused, not ${JSON.stringify(e)}`);
  assert.equal(e.code, "RESOURCE_EXHAUSTED");
  assert.equal(refusedBeforeSending(e), "min_interval");
  assert.deepEqual(ran, ["pulse"], "the operator's pulse was sent within the interval");
});
