/**
 * A provider whose clock is an hour ahead: while it stamps every sample an hour in the future and
 * then stops answering a signal, the signal goes STALE on the runtime's own monotonic clock -- in
 * the state API (age_ms counts from receipt), for the bad_quality alarm and for an interlock's
 * stale-input rule, which refuses the call. The provider's timestamp is reported as given and
 * flagged in GET /v0/providers/health (`timestamp_skew`).
 */
import assert from "node:assert/strict";
import { TIMESTAMP_SKEW_LIMIT_MS } from "../../src/state/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig, Api, callBody, program } from "./alarms_helpers.ts";

const HOUR_MS = 3_600_000;
const STALE_AFTER_MS = 1000;

Deno.test("A provider stamping samples an hour ahead cannot keep a signal fresh: it goes STALE, the alarm raises and the interlock refuses", async () => {
  const ahead = Date.now() + HOUR_MS;
  const inventory: Inventory = {
    devices: {
      probe: {
        signals: [{ id: "temp", type: T.DOUBLE }],
        values: [dbl("temp", 25, { ts: ahead })],
      },
    },
  };
  const inventoryFile = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(inventory));
  const fx = await startHttpFixture({
    config: {
      providers: [
        simProvider("sim0", { yaml: SIM_INERT_YAML }),
        programmableProvider("p0", inventoryFile),
      ],
      health: { staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS } },
      ...alarmsConfig(
        `
alarms:
  - { id: probe_hot, signal: p0/probe/temp, hi: 80, message: Probe hot }
interlocks:
  - id: probe_guard
    block: [sim0/motorctl0/set_motor_duty]
    while: p0/probe/temp > 80
    message: Motor held while the probe is hot or unreadable
`,
        ["sim0", "p0"],
      ),
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const duty = callBody("sim0/motorctl0", 10, {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: 0.2 },
    });
    const read = async () => (await api.get("/v0/state/p0/probe")).json.values[0];
    // Fresh: a sample just received. A loaded machine can leave a poll later than the 1 s bound
    // (STALE then, rightly, and the interlock refuses): wait for a fresh one, and for the call
    // to be let through while it is (bounded; an interlock refusing fresh samples times out).
    const fresh = await waitFor("temp fresh in the state API", async () => {
      const v = await read();
      return v.quality === "OK" ? v : null;
    });
    assert.equal(fresh.quality, "OK");
    assert.equal(fresh.timestamp_epoch_ms, ahead, "the provider's timestamp, as given");
    assert.ok(fresh.age_ms < STALE_AFTER_MS, `age ${fresh.age_ms} ms, counted from receipt`);
    await waitFor(
      "the call let through on a fresh sample",
      async () => (await api.post("/v0/call", duty)).status === 200,
    );
    const skew = (await api.get("/v0/providers/health")).json.providers
      .find((p: { provider_id: string }) => p.provider_id === "p0").timestamp_skew;
    assert.ok(skew.samples_total > 0);
    assert.ok(skew.last_skew_ms > HOUR_MS - 60_000 && skew.last_skew_ms > TIMESTAMP_SKEW_LIMIT_MS);

    // The provider stops answering the signal (its reads answer no value for it).
    await program(fx.runtime, "p0", "probe", { read: { values: [] } });
    const stale = await waitFor("temp STALE in the state API", async () => {
      const v = await read();
      return v.quality === "STALE" ? v : null;
    }, 5000);
    // age_ms is rounded: a value just past its bound reads as the bound itself.
    assert.ok(stale.age_ms >= STALE_AFTER_MS, `age ${stale.age_ms} ms`);
    await waitFor(
      "the bad_quality alarm raised",
      async () => (await api.get("/v0/alarms/probe_hot")).json.alarm.state === "active",
    );
    const alarm = (await api.get("/v0/alarms/probe_hot")).json.alarm;
    assert.equal(alarm.cause, "bad_quality");
    assert.match(alarm.bad_input, /^p0\/probe\/temp is stale: its sample is \d+ ms old/);
    const refused = await api.post("/v0/call", duty);
    assert.equal(refused.status, 409);
    // The interlock names the kept sample the cache marked STALE of a device failing by its
    // answers (none of its polled signals answered) by the device's condition (docs/alarms.md):
    // one reason that lasts across polls, not the mark that comes and goes.
    assert.match(
      refused.json.status.message,
      /Interlock probe_guard blocks .*bad input: p0\/probe\/temp: device p0\/probe is (failing|down) \(its reads are answered, but none of its polled signals answered\)/,
    );
  } finally {
    await fx.close();
    await Deno.remove(inventoryFile);
  }
});
