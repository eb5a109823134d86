/**
 * providerHealthViews: GET /v0/providers/health as built from supervision, the state cache and
 * the provider's own GetHealth answer (reported states, devices only the provider knows,
 * the degraded roll-up).
 */
import assert from "node:assert/strict";
import {
  type WireDeviceHealth,
  WireDeviceState,
  type WireProviderHealth,
  WireProviderState,
} from "../../src/adpp/mod.ts";
import {
  MAX_REPORTED_METRICS,
  MAX_REPORTED_TEXT_CHARS,
  MAX_UNREGISTERED_REPORTED_DEVICES,
  providerHealthViews,
  type ReportedHealthEntry,
} from "../../src/state/mod.ts";
import { rig, rigNotStarted } from "../helpers/rig.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { dataProvider } from "../scenarios/_data_helpers.ts";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";

const STALENESS = { warnAfterMs: 0, staleAfterMs: 0 };

/** A runtime whose provider was never started (down, no devices): its registry and cache. */
function providerDown() {
  const { registry, cache } = rigNotStarted({ providers: [simProvider("sim0")] }).kernel;
  return { registry, cache };
}

function reported(
  provider: WireProviderHealth | undefined,
  devices: WireDeviceHealth[] = [],
): ReportedHealthEntry {
  return { atMs: 0, atMono: 0, response: { ...(provider ? { provider } : {}), devices } };
}

Deno.test("providerHealthViews maps a down provider's reported health and lists devices only it reports", () => {
  const { registry, cache } = providerDown();
  const entry = reported(
    { state: WireProviderState.OK, message: "ok", metrics: { impl: "test" } },
    [
      {
        device_id: "a0",
        state: WireDeviceState.OK,
        message: "fine",
        metrics: { temp: "41" },
        last_seen: { seconds: 1_700_000_000, nanos: 5_000_000 },
      },
      { device_id: "b0", state: WireDeviceState.STALE },
      { device_id: "c0", state: WireDeviceState.UNREACHABLE, message: "no answer" },
      { device_id: "", state: WireDeviceState.FAULT }, // no id: cannot be listed
      { state: WireDeviceState.FAULT },
    ],
  );
  const [view] = providerHealthViews(
    registry,
    cache,
    { pollingIntervalMs: 100, staleness: STALENESS, nowMono: performance.now() },
    new Map([["sim0", entry]]),
  );
  const unregistered = {
    health: "UNAVAILABLE",
    last_poll_ms: 0,
    staleness_ms: 0,
    registered: false,
    stale_signal_count: 0,
    fault_signal_count: 0,
    type_version: "", // no descriptor for a device the registry does not carry
    descriptor_tags: {},
    claims: [],
  };
  assert.deepEqual(view, {
    provider_id: "sim0",
    state: "UNAVAILABLE",
    lifecycle_state: "DOWN",
    last_seen_ago_ms: null,
    uptime_seconds: 0,
    device_count: 0,
    degraded: true, // c0 is unreachable
    failed_device_count: 1,
    reported: { state: "STATE_OK", message: "ok", metrics: { impl: "test" } },
    host_check: null,
    start_error: null,
    supervision: registry.host("sim0")!.supervision(),
    devices: [
      {
        device_id: "a0",
        ...unregistered,
        reported: {
          state: "STATE_OK",
          message: "fine",
          metrics: { temp: "41" },
          last_seen_epoch_ms: 1_700_000_000_005,
        },
      },
      {
        device_id: "b0",
        ...unregistered,
        reported: { state: "STATE_STALE", message: "", metrics: {}, last_seen_epoch_ms: null },
      },
      {
        device_id: "c0",
        ...unregistered,
        reported: {
          state: "STATE_UNREACHABLE",
          message: "no answer",
          metrics: {},
          last_seen_epoch_ms: null,
        },
      },
    ],
    discovery_warnings: [],
    held_claims: [],
    data_faults: { type_mismatch: 0, non_finite: 0, undeclared_signal: 0 },
    timestamp_skew: { samples_total: 0, last_skew_ms: null, last_at_epoch_ms: null },
  });
});

Deno.test("providerHealthViews: degraded when the provider says DEGRADED or FAULT or a device is UNREACHABLE or FAULT", () => {
  const { registry, cache } = providerDown();
  const view = (entry: ReportedHealthEntry | null) =>
    providerHealthViews(
      registry,
      cache,
      { pollingIntervalMs: 100, staleness: STALENESS, nowMono: 0 },
      new Map([["sim0", entry]]),
    )[0];
  const OK = { state: WireProviderState.OK };
  const dev = (state: number): WireDeviceHealth => ({ device_id: "d0", state });
  const cases: Array<[string, ReportedHealthEntry | null, string | null, boolean, number]> = [
    ["all OK", reported(OK, [dev(WireDeviceState.OK)]), "STATE_OK", false, 0],
    ["a STALE device", reported(OK, [dev(WireDeviceState.STALE)]), "STATE_OK", false, 0],
    [
      "an UNREACHABLE device",
      reported(OK, [dev(WireDeviceState.UNREACHABLE)]),
      "STATE_OK",
      true,
      1,
    ],
    ["a FAULT device", reported(OK, [dev(WireDeviceState.FAULT)]), "STATE_OK", true, 1],
    ["an unknown device state", reported(OK, [dev(9)]), "STATE_OK", false, 0],
    [
      "provider DEGRADED",
      reported({ state: WireProviderState.DEGRADED }),
      "STATE_DEGRADED",
      true,
      0,
    ],
    ["provider FAULT", reported({ state: WireProviderState.FAULT }), "STATE_FAULT", true, 0],
    ["provider state unset", reported({ message: "?" }), "STATE_UNSPECIFIED", false, 0],
    ["provider state unknown", reported({ state: 7 }), "STATE_UNSPECIFIED", false, 0],
    ["no provider part", reported(undefined), null, false, 0],
    ["nothing reported", null, null, false, 0],
  ];
  for (const [name, entry, state, degraded, failed] of cases) {
    const v = view(entry);
    assert.equal(v!.reported?.state ?? null, state, name);
    assert.equal(v!.degraded, degraded, name);
    assert.equal(v!.failed_device_count, failed, name);
  }
  assert.equal(((view(reported(OK, [dev(9)])))!.devices[0])!.reported?.state, "STATE_UNSPECIFIED");
  assert.deepEqual((view(reported({ state: WireProviderState.FAULT })))!.reported, {
    state: "STATE_FAULT",
    message: "",
    metrics: {},
  });
  // Without an override the cache's last GetHealth answer is used: none yet.
  const [cached] = providerHealthViews(registry, cache, {
    pollingIntervalMs: 100,
    staleness: STALENESS,
    nowMono: 0,
  });
  assert.equal(cached!.reported, null);
  assert.deepEqual(cached!.devices, []);
});

Deno.test("providerHealthViews grades each registered device of a running provider and attaches its reported health", async () => {
  // The sim in-process; the scripted data provider (a scenario's, raw frames) as a real child.
  await using r = await rig({
    providers: [
      simProvider("sim0", { yaml: SIM_INERT_YAML }),
      dataProvider("p0", "discovery"), // refuses some devices, with warnings
    ],
    pollingIntervalMs: 60_000, // the priming poll only: the cache holds still
  });
  const rt = r.kernel;
  const host = rt.registry.host("sim0")!;
  const live = await rt.cache.fetchReportedHealth(host);
  assert.ok(live, "the sim answers GetHealth");
  const withGhost: ReportedHealthEntry = {
    ...live,
    response: {
      ...live.response,
      devices: [
        ...(live.response.devices ?? []),
        { device_id: "ghost0", state: WireDeviceState.UNREACHABLE, message: "init failed" },
      ],
    },
  };
  const analog = rt.cache.device("sim0", "analogsensor0")!;
  // Ages run on the runtime's monotonic clock from the last poll and each sample's receipt.
  const t0 = Math.max(
    analog.lastPollMono,
    ...[...analog.signals.values()].map((s) => s.receivedMono),
  );
  const views = (nowMono: number) =>
    providerHealthViews(
      rt.registry,
      rt.cache,
      // stale_after 1000 ms: above the analog channels' declared 500, below sensor_quality's 3000
      { pollingIntervalMs: 60_000, staleness: { warnAfterMs: 0, staleAfterMs: 1000 }, nowMono },
      new Map([["sim0", withGhost]]),
    )[0];

  const fresh = views(t0 + 100);
  assert.equal(fresh!.state, "AVAILABLE");
  assert.equal(fresh!.device_count, 5);
  assert.equal(fresh!.failed_device_count, 1, "ghost0");
  assert.equal(fresh!.degraded, true);
  assert.deepEqual(fresh!.reported, {
    state: "STATE_OK",
    message: "ok",
    metrics: live.response.provider!.metrics,
  });
  assert.deepEqual(
    fresh!.devices.map((d) => [d.device_id, d.registered, d.health, d.reported?.state]),
    [
      ["analogsensor0", true, "OK", "STATE_OK"],
      ["motorctl0", true, "OK", "STATE_OK"],
      ["relayio0", true, "OK", "STATE_OK"],
      ["tempctl0", true, "OK", "STATE_OK"],
      ["chaos_control", true, "UNKNOWN", "STATE_OK"],
      ["ghost0", false, "UNKNOWN", "STATE_UNREACHABLE"], // provider up: unknown, not unavailable
    ],
  );
  const a = fresh!.devices[0];
  assert.equal(a!.last_poll_ms, analog.lastPollMs);
  assert.equal(a!.staleness_ms, Math.round(t0 + 100 - analog.lastPollMono));
  assert.equal(a!.type_version, "1.0");
  assert.deepEqual(a!.descriptor_tags, { family: "sim", kind: "analog_input" });
  // A device only the provider reports has no descriptor: "" and {} (anolis OpenAPI).
  const ghost = fresh!.devices[5];
  assert.equal(ghost!.type_version, "");
  assert.deepEqual(ghost!.descriptor_tags, {});
  assert.deepEqual(a!.reported, {
    state: "STATE_OK",
    message: "ok",
    metrics: { impl: "sim" },
    last_seen_epoch_ms: null,
  });

  // 2 s later: the four voltage channels (stale_after 500) are stale under the 1000 ms bound,
  // sensor_quality (declares 3000) is not.
  const late = (views(t0 + 2000))!.devices[0];
  assert.equal(late!.health, "STALE");
  assert.equal(late!.stale_signal_count, 4);
  assert.equal(late!.staleness_ms, Math.round(t0 + 2000 - analog.lastPollMono));

  // A GetHealth answer without devices: registered devices carry no reported part.
  const [bare, p0] = providerHealthViews(
    rt.registry,
    rt.cache,
    { pollingIntervalMs: 60_000, staleness: STALENESS, nowMono: t0 },
    new Map([["sim0", reported({ state: WireProviderState.OK })]]),
  );
  assert.deepEqual(bare!.devices.map((d) => d.reported), [null, null, null, null, null]);
  assert.equal(bare!.degraded, false);
  assert.equal(bare!.failed_device_count, 0);
  assert.deepEqual(bare!.discovery_warnings, []);
  // The refused devices' warnings are part of the provider's view.
  assert.equal(p0!.discovery_warnings?.length, 7);
  assert.deepEqual(p0!.discovery_warnings, rt.cache.discoveryWarnings("p0"));
});

Deno.test("providerHealthViews does not show a dead process's last GetHealth report while its provider is down", async () => {
  const inventory: Inventory = {
    devices: { pump: { signals: [{ id: "flow", type: T.DOUBLE }], values: [dbl("flow", 1)] } },
  };
  // Restarts far off: the provider stays down for the test.
  const fx = await startProgrammable(inventory, {
    inProcess: true,
    restart: { backoffMs: [60_000, 60_000, 60_000] },
  });
  try {
    await fx.program("pump", {
      health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
    });
    assert.ok(await fx.cache.fetchReportedHealth(fx.host));
    const view = () =>
      providerHealthViews(fx.registry, fx.cache, {
        pollingIntervalMs: 100,
        staleness: STALENESS,
        nowMono: fx.clock.monoMs(),
      })[0]!;
    assert.deepEqual([view().degraded, view().devices[0]!.reported?.state], [
      true,
      "STATE_UNREACHABLE",
    ]);
    fx.kill();
    await waitFor("down", () => !fx.host.available);
    const down = view();
    assert.equal(down.lifecycle_state, "RESTARTING");
    assert.deepEqual(
      [down.degraded, down.failed_device_count, down.devices.map((d) => [d.health, d.reported])],
      [false, 0, [["UNAVAILABLE", null]]],
      "nothing the dead process said is shown as the provider's word",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache.fetchReportedHealth keeps no answer of a host a reload took out, whether it comes before or after its successor was added", async () => {
  const inventory: Inventory = {
    devices: { pump: { signals: [{ id: "flow", type: T.DOUBLE }], values: [dbl("flow", 1)] } },
  };
  for (const answered of ["after its successor", "before its successor"] as const) {
    const fx = await startProgrammable(inventory, { inProcess: true });
    const old = fx.host;
    try {
      await fx.program("pump", {
        health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
      });
      assert.ok(await fx.cache.fetchReportedHealth(old), "answered while it is p0's host");
      // Asked while it is p0's host; taken out by a reload (which stops it meanwhile) before the
      // answer comes -- and, in the second case, its successor added before it comes too.
      const asked = fx.cache.fetchReportedHealth(old);
      assert.equal(fx.registry.remove("p0"), old);
      if (answered === "after its successor") fx.registry.add(old.config); // not started
      const answer = await asked;
      assert.equal(fx.cache.reportedHealth("p0"), undefined, `${answered}: kept for p0`);
      assert.equal(answer, null, `${answered}: a retired host's answer is not p0's word`);
      if (answered === "before its successor") {
        fx.registry.add(old.config);
        assert.equal(fx.cache.reportedHealth("p0"), undefined, `${answered}: kept for p0`);
      }
    } finally {
      await old.stop(2000);
      await fx.close();
    }
  }
});

Deno.test("providerHealthViews lists in held_claims the devices a provider no longer lists but holds claims of, with their keys", async () => {
  const device = (claim: string) => ({
    signals: [{ id: "v", type: T.DOUBLE }],
    tags: { "anolis.claim": claim },
  });
  const both: Inventory = {
    devices: { dcmt_0: device("i2c:/dev/i2c-1:0x61"), ph_0: device("i2c:/dev/i2c-1:0x63 gpio:5") },
  };
  const fx = await startProgrammable(both, { restart: {} });
  try {
    const view = () =>
      providerHealthViews(fx.registry, fx.cache, {
        pollingIntervalMs: 100,
        staleness: STALENESS,
        nowMono: fx.clock.monoMs(),
      })[0]!;
    assert.deepEqual(view().held_claims, []);
    /** Restarts p0 on `inv` and waits until its new process is up. */
    const restartOn = async (inv: Inventory) => {
      await fx.setInventory(inv);
      const before = fx.kill();
      await waitFor(
        "p0 back",
        () => fx.host.available && fx.host.session !== null && fx.host.session.pid !== before,
        30_000,
      );
    };
    // ph_0 fails its init: p0 lists dcmt_0 alone and holds ph_0's claims.
    await restartOn({ devices: { dcmt_0: both.devices.dcmt_0! } });
    const one = view();
    assert.deepEqual(one.devices.map((d) => [d.device_id, d.claims]), [
      ["dcmt_0", ["i2c:/dev/i2c-1:0x61"]],
    ]);
    assert.deepEqual(one.held_claims, [
      { device_id: "ph_0", claims: ["i2c:/dev/i2c-1:0x63", "gpio:5"] },
    ]);
    // Both back: nothing held apart from the listed devices.
    await restartOn(both);
    assert.deepEqual(view().held_claims, []);
  } finally {
    await fx.close();
  }
});

Deno.test("providerHealthViews shows MAX_UNREGISTERED_REPORTED_DEVICES devices only the provider reports and counts the rest in devices_omitted", () => {
  const { registry, cache } = providerDown();
  const view = (devices: WireDeviceHealth[], metrics?: Record<string, string>) =>
    providerHealthViews(
      registry,
      cache,
      { pollingIntervalMs: 100, staleness: STALENESS, nowMono: 0 },
      new Map([[
        "sim0",
        reported(metrics ? { state: WireProviderState.OK, metrics } : undefined, devices),
      ]]),
    )[0]!;
  const ghosts = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      device_id: `ghost${i}`,
      state: WireDeviceState.UNREACHABLE,
    }));
  // The exact bound: every entry shown, nothing counted, no provider part made up.
  const atBound = view(ghosts(MAX_UNREGISTERED_REPORTED_DEVICES));
  assert.equal(atBound.devices.length, MAX_UNREGISTERED_REPORTED_DEVICES);
  assert.equal(atBound.reported, null);
  // One past it: the first 64 in the answer's order, the 65th counted once.
  const past = view(ghosts(MAX_UNREGISTERED_REPORTED_DEVICES + 1));
  assert.deepEqual(
    past.devices.map((d) => d.device_id),
    ghosts(MAX_UNREGISTERED_REPORTED_DEVICES).map((g) => g.device_id),
  );
  assert.deepEqual(past.reported, {
    state: "STATE_UNSPECIFIED",
    message: "",
    metrics: { devices_omitted: "1" },
  });
  assert.equal(past.failed_device_count, MAX_UNREGISTERED_REPORTED_DEVICES);
  // A provider that cut its own answer (the SDK's devices_omitted): the two counts add up.
  const many = view(ghosts(200_000), { impl: "cpp", devices_omitted: "7" });
  assert.equal(many.devices.length, MAX_UNREGISTERED_REPORTED_DEVICES);
  assert.deepEqual(many.reported!.metrics, {
    impl: "cpp",
    devices_omitted: String(7 + 200_000 - MAX_UNREGISTERED_REPORTED_DEVICES),
  });
  // Repeats of a shown device and entries without an id name no device left out: not counted.
  const repeats = view([...ghosts(1), ...ghosts(1), { state: WireDeviceState.OK }], { a: "1" });
  assert.equal(repeats.devices.length, 1);
  assert.deepEqual(repeats.reported!.metrics, { a: "1" });
});

Deno.test("providerHealthViews shows MAX_REPORTED_METRICS metrics per entry, keys, values, messages and ids cut to MAX_REPORTED_TEXT_CHARS with a marker", () => {
  const { registry, cache } = providerDown();
  const metrics = (n: number) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, String(i)]));
  const long = "x".repeat(MAX_REPORTED_TEXT_CHARS + 1);
  const exact = "y".repeat(MAX_REPORTED_TEXT_CHARS);
  const cut = `${"x".repeat(MAX_REPORTED_TEXT_CHARS)}\u2026`;
  const [v] = providerHealthViews(
    registry,
    cache,
    { pollingIntervalMs: 100, staleness: STALENESS, nowMono: 0 },
    new Map([[
      "sim0",
      reported(
        { state: WireProviderState.OK, message: long, metrics: metrics(MAX_REPORTED_METRICS + 1) },
        [
          {
            device_id: long,
            state: WireDeviceState.OK,
            message: exact,
            metrics: { [long]: long, [exact]: exact, ...metrics(MAX_REPORTED_METRICS) },
          },
        ],
      ),
    ]]),
  );
  // The provider's: the first 64 in the answer's order, the 65th not shown; its message cut.
  assert.deepEqual(v!.reported!.metrics, metrics(MAX_REPORTED_METRICS));
  assert.equal(v!.reported!.message, cut);
  const d = v!.devices[0]!;
  assert.equal(d.device_id, cut);
  assert.equal(d.reported!.message, exact, "the exact bound is not cut");
  assert.equal(Object.keys(d.reported!.metrics).length, MAX_REPORTED_METRICS);
  assert.equal(d.reported!.metrics[cut], cut);
  assert.equal(d.reported!.metrics[exact], exact);
  // Two long keys first, then m0..m61: m62 is the 65th.
  assert.equal(d.reported!.metrics[`m${MAX_REPORTED_METRICS - 2}`], undefined, "past the bound");
  assert.equal(
    d.reported!.metrics[`m${MAX_REPORTED_METRICS - 3}`],
    String(MAX_REPORTED_METRICS - 3),
  );
});

Deno.test("providerHealthViews shows the entry of every device the provider lists, however many devices only it reports come first", async () => {
  await using r = await rig({
    providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })],
    pollingIntervalMs: 60_000, // the priming poll only
  });
  const rt = r.kernel;
  const live = await rt.cache.fetchReportedHealth(rt.registry.host("sim0")!);
  assert.ok(live, "the sim answers GetHealth");
  const ghosts = Array.from({ length: MAX_UNREGISTERED_REPORTED_DEVICES + 36 }, (_, i) => ({
    device_id: `ghost${i}`,
    state: WireDeviceState.UNREACHABLE,
  }));
  const [v] = providerHealthViews(
    rt.registry,
    rt.cache,
    { pollingIntervalMs: 60_000, staleness: STALENESS, nowMono: 0 },
    new Map([["sim0", {
      ...live,
      response: { ...live.response, devices: [...ghosts, ...(live.response.devices ?? [])] },
    }]]),
  );
  const registered = v!.devices.filter((d) => d.registered);
  assert.equal(registered.length, 5);
  assert.deepEqual(registered.map((d) => d.reported?.state), Array(5).fill("STATE_OK"));
  assert.equal(v!.devices.length, 5 + MAX_UNREGISTERED_REPORTED_DEVICES);
  assert.equal(v!.reported!.metrics.devices_omitted, "36");
});
