/**
 * A behavior tree in AUTO reading a signal of a provider whose clock is an hour ahead: while the
 * provider stamps every sample an hour in the future and then stops answering that signal, the
 * tree's CheckQuality sees it STALE on the runtime's own monotonic clock (docs/alarms.md, "Time":
 * the provider's timestamp is never trusted for an age), and its fallback branch acts -- as the
 * alarms and interlocks do (alarms_clock_skew_test.ts). The device keeps answering another signal,
 * so it is not failing (docs/safety.md section 5) and AUTO stands. Real HTTP on loopback, the
 * simulated and programmable providers as child processes.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { Api, program } from "./alarms_helpers.ts";
import { automationOptions, TreeDir, treeXml } from "./automation_helpers.ts";

const HOUR_MS = 3_600_000;
const STALE_AFTER_MS = 1000;

/** Relay 3 on once the tree finds the probe's temperature STALE; otherwise it only waits. */
const ON_STALE = treeXml(
  `<Fallback name="watch">
      <Sequence name="on_stale">
        <CheckQuality device_handle="p0/probe" signal_id="temp" expected_quality="STALE" />
        <CallDevice name="relay_on" device_handle="sim0/relayio0" function_name="set_relay_ch3"
                    args='json:{"enabled": true}' />
        <Sleep msec="60000" />
      </Sequence>
      <Sleep msec="20" />
    </Fallback>`,
);

Deno.test("A tree in AUTO sees a signal STALE whose provider stamps samples an hour ahead once it stops answering it", async () => {
  const ahead = Date.now() + HOUR_MS;
  const inventory: Inventory = {
    devices: {
      probe: {
        signals: [{ id: "temp", type: T.DOUBLE }, { id: "alive", type: T.DOUBLE }],
        values: [dbl("temp", 25, { ts: ahead }), dbl("alive", 1, { ts: ahead })],
      },
    },
  };
  const inventoryFile = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(inventory));
  const dir = await TreeDir.create();
  const tree = await dir.write("on_stale.xml", ON_STALE);
  const options = automationOptions(tree);
  const fx = await startHttpFixture({
    config: {
      ...options,
      providers: [
        simProvider("sim0", { yaml: SIM_INERT_YAML }),
        programmableProvider("p0", inventoryFile),
      ],
      health: { staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS } },
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    const relay3 = async () => {
      await fx.runtime.cache.pollDevice("sim0", "relayio0");
      return fx.runtime.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
    };
    const temp = async () =>
      (await api.get("/v0/state/p0/probe")).json.values
        .find((v: { signal_id: string }) => v.signal_id === "temp");
    assert.deepEqual(await relay3(), { type: "bool", bool: false });
    // Fresh, though stamped an hour ahead: a sample just received. A loaded machine can leave a
    // poll later than the 1 s bound (STALE then, rightly): wait for a fresh one.
    const fresh = await waitFor("temp fresh in the state API", async () => {
      const v = await temp();
      return v?.quality === "OK" ? v : null;
    });
    assert.equal(fresh.timestamp_epoch_ms, ahead, "the provider's timestamp, as given");
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const auto = await api.post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));

    // The provider stops answering temp (alive still answers: the device is not failing).
    await program(fx.runtime, "p0", "probe", {
      read: { values: [dbl("alive", 1, { ts: ahead })] },
    });
    await waitFor(
      "the tree's fallback: relay 3 on",
      async () => {
        const v = await relay3();
        return v?.type === "bool" && v.bool;
      },
      10_000,
    );
    const stale = await temp();
    assert.equal(stale.quality, "STALE");
    assert.equal(stale.timestamp_epoch_ms, ahead, "the provider's timestamp, still as given");
    assert.equal(fx.runtime.modes.current(), "AUTO", "the device is not lost: AUTO stands");
    // The call was the tree's, made on seeing STALE.
    const calls = (await fx.runtime.audit.query({ limit: 1000 })).entries
      .filter((e) => e.action === "call" && e.function === "set_relay_ch3");
    assert.deepEqual(calls.map((e) => [e.origin.kind, e.outcome]), [["automation", "accepted"]]);
  } finally {
    await fx.close();
    await Deno.remove(inventoryFile);
    await dir.dispose();
  }
});
