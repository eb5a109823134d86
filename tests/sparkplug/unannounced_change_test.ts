/**
 * A mode change or an e-stop latch or release whose time cannot be read (the wall clock fails
 * twice: the bus event is not published, no invented time) still reaches the Sparkplug host: the
 * node hears the change itself (ModeManager.onModeChange, Estop.onLatchChange) and publishes the
 * node metrics as they are, stamped at its own next clock read. In-process runtime (the simulated
 * provider as a child process) against a real Mosquitto, its wall clock failing from the change
 * until the change's listeners are told.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { recordEvents, waitFor } from "../helpers/kernel.ts";
import { lastNodeValue, simNodeConfig, withSparkplugRuntime } from "../helpers/sparkplug_host.ts";
import { failingClock } from "../safety/_clock_rig.ts";
import { NODE_METRICS } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { SparkplugHost } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-unannounced";

/** The runtime's wall clock fails (throws) while `failing.when()` holds. */
function rig(
  body: (rt: Kernel, host: SparkplugHost, failing: { when: () => boolean }) => Promise<void>,
) {
  const failing = { when: () => false };
  const fc = failingClock({ read: "nowMs", times: Infinity, when: () => failing.when() });
  return withSparkplugRuntime({
    group: GROUP,
    config: simNodeConfig(NODE, GROUP),
    start: { host: { clock: fc.clock } },
  }, async (rt, host) => {
    await waitFor("the births", () => rt.sparkplug!.online);
    await body(rt, host, failing);
    assert.ok(fc.failures() >= 2, `the clock failed ${fc.failures()} time(s)`);
  });
}

/** The last value of node metric `name` the host received. */
const at = (host: SparkplugHost, name: string) => lastNodeValue(host.messages, GROUP, NODE, name);

const never = () => false;

Deno.test({
  name: "a mode change whose time the clock cannot read reaches the Sparkplug host (Runtime/Mode)",
  ignore: mosquittoMissing(),
  fn: () =>
    rig(async (rt, host, failing) => {
      await waitFor("Runtime/Mode IDLE at the host", () => at(host, NODE_METRICS.mode) === "IDLE");
      const events = recordEvents(rt);
      // From the commit (the mode is MANUAL) until its listeners are told (this one, registered
      // last, is told last): every wall clock read fails, the announcement's two included.
      rt.modes.onModeChange(() => failing.when = never);
      failing.when = () => rt.modes.current() === "MANUAL";
      assert.equal((await rt.modes.requestWithReport("MANUAL")).mode, "MANUAL");
      events.stop();
      assert.deepEqual(
        events.events.filter((e) => e.kind === "mode_change"),
        [],
        "not announced on the bus (no invented time)",
      );
      await waitFor(
        "Runtime/Mode MANUAL at the host",
        () => at(host, NODE_METRICS.mode) === "MANUAL",
      );
    }),
});

Deno.test({
  name:
    "an e-stop latch (FAULT standing) and its release whose time the clock cannot read reach the Sparkplug host (Runtime/Estop Latched)",
  ignore: mosquittoMissing(),
  fn: () =>
    rig(async (rt, host, failing) => {
      await rt.estop.trigger("first");
      await waitFor("the first latch at the host", () => at(host, NODE_METRICS.latched) === true);
      rt.estop.clear();
      assert.equal(rt.modes.current(), "FAULT", "the release leaves the mode as it is");
      await waitFor("latch cleared at the host", () => at(host, NODE_METRICS.latched) === false);
      const events = recordEvents(rt);
      // From the latch until its onLatched: every wall clock read fails, the latch's two included.
      failing.when = () => rt.estop.latched;
      const stop = rt.estop.trigger("clock failing", { onLatched: () => failing.when = never });
      failing.when = never;
      assert.equal(rt.estop.latched, true);
      assert.equal(rt.estop.status().latched_at_epoch_ms, null, "no invented time");
      await waitFor("latched at the host", () => at(host, NODE_METRICS.latched) === true);
      await stop;
      // The release: every wall clock read of clear() after the latch is let go fails.
      failing.when = () => !rt.estop.latched;
      rt.estop.clear();
      failing.when = never;
      events.stop();
      assert.deepEqual(
        events.events.filter((e) => e.kind === "estop_change"),
        [],
        "neither announced on the bus (no invented time)",
      );
      await waitFor("released at the host", () => at(host, NODE_METRICS.latched) === false);
    }),
});
