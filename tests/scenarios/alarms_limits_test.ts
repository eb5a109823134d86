/**
 * The whole service (runtime + simulated provider + HTTP + telemetry + runs) heating the sim's
 * temperature controller: an alarm raises past `hi` — on the event stream right after the first
 * sample past it, in GET /v0/alarms, as a runtime_alarm row and as a run event — clears only once
 * the temperature is below hi − hysteresis, and an alarm with delay_ms raises only after the
 * condition has held that long. The heater's time constant is TAU_S instead of the simulator's
 * 6 s (fewer seconds of waiting).
 *
 * The samples inside the hysteresis band do not depend on how fast they come: after the raise
 * the heater's closed loop holds the temperature at IN_BAND (it approaches it from above, never
 * passing below), and only once a sample inside the band has been seen does the test switch the
 * heater off. (Cooling on its own, samples seconds apart on a loaded machine could jump over the
 * 1.5 °C band.)
 */
import assert from "node:assert/strict";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, simYamlWithHeaterTau, testConfig } from "../helpers/sim_config.ts";
import { LineRecorder } from "../helpers/victoria_metrics.ts";
import { alarmsConfig, Api, callBody, EventStream, type ReceivedEvent } from "./alarms_helpers.ts";

const HI = 28;
const HYSTERESIS = 1.5;
const DELAY_MS = 1500;
/** The heater's time constant (s): at 100 ms a sample it cools ~0.2 °C a sample near HI. */
const TAU_S = 2;

/** Inside the band [HI - HYSTERESIS, HI): where the closed loop holds the heater after the raise. */
const IN_BAND = HI - HYSTERESIS / 2;

const relay1 = (on: boolean) =>
  callBody("sim0/tempctl0", 3, {
    relay_index: { type: "int64", int64: 1 },
    state: { type: "bool", bool: on },
  });
const setMode = (mode: "open" | "closed") =>
  callBody("sim0/tempctl0", 1, { mode: { type: "string", string: mode } });
const setSetpoint = (value: number) =>
  callBody("sim0/tempctl0", 2, { value: { type: "double", double: value } });

Deno.test("An alarm raises past hi (SSE, /v0/alarms, telemetry, run event), clears only below hi - hysteresis, and waits delay_ms", async () => {
  const recorder = new LineRecorder(null);
  const dataDir = await Deno.makeTempDir({ prefix: "runtime-alarms-" });
  const simYaml = `${dataDir}/sim.yaml`;
  await Deno.writeTextFile(simYaml, simYamlWithHeaterTau(TAU_S));
  const config = testConfig({
    providers: [simProvider("sim0", { yaml: simYaml })],
    runtime: { name: "lab1", dataDir },
    // A stale bound no load reaches (1 min, not tc1_temp's 1.5 s): this test is about limits, and
    // a poll late past the bound would raise both alarms for their bad input (rightly) first.
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 60_000 } },
    telemetry: {
      enabled: true,
      healthIntervalMs: 0,
      influxdb: {
        url: recorder.url,
        org: "anolis",
        bucket: "anolis",
        token: "t0ken",
        batchSize: 50,
        flushIntervalMs: 100,
        maxRetryBufferSize: 1000,
        queueSize: 10000,
      },
    },
    ...alarmsConfig(`
alarms:
  - { id: tc1_warm, signal: sim0/tempctl0/tc1_temp, hi: ${HI}, hysteresis: ${HYSTERESIS} }
  - { id: tc1_warm_delayed, signal: sim0/tempctl0/tc1_temp, hi: ${HI}, delay_ms: ${DELAY_MS} }
`),
  });
  const service = await startServing(config);
  const api = new Api(`http://127.0.0.1:${service.http!.port}`);
  const sse = await EventStream.open(api.base);
  try {
    const { run } = await service.runs.open({ experiment_label: "heat" }) as {
      run: { run_id: string };
    };
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.deepEqual(
      (await api.get("/v0/alarms")).json.alarms.map((a: { state: string }) => a.state),
      [
        "normal",
        "normal",
      ],
    );
    assert.equal((await api.post("/v0/call", relay1(true))).status, 200);

    const alarmFrames = (id: string, transition: string) =>
      sse.of("alarm").filter((f) => f.data.alarm_id === id && f.data.transition === transition);
    await waitFor("tc1_warm raised", () => alarmFrames("tc1_warm", "raise").length > 0, 30_000);
    const view = (await api.get("/v0/alarms/tc1_warm")).json.alarm;
    await waitFor(
      "the delayed alarm raised",
      () => alarmFrames("tc1_warm_delayed", "raise").length > 0,
      30_000,
    );
    // Hold the heater inside the hysteresis band (closed loop at IN_BAND: it cools towards it
    // from above, its relays off) until a sample there has been seen, then switch it off (open
    // loop, relays off) to cool below the band.
    assert.equal((await api.post("/v0/call", setSetpoint(IN_BAND))).status, 200);
    assert.equal((await api.post("/v0/call", setMode("closed"))).status, 200);
    await waitFor(
      "a tc1_temp sample inside the hysteresis band",
      () => {
        const raisedAt = sse.frames.findIndex((f) =>
          f.event === "alarm" && f.data.alarm_id === "tc1_warm" && f.data.transition === "raise"
        );
        return sse.frames.slice(raisedAt + 1).some((f) =>
          f.event === "state_update" && f.data.device_id === "tempctl0" &&
          f.data.signal_id === "tc1_temp" && f.data.value.double < HI
        );
      },
      60_000,
    );
    assert.equal((await api.post("/v0/call", setMode("open"))).status, 200);
    await waitFor("tc1_warm cleared", () => alarmFrames("tc1_warm", "clear").length > 0, 60_000);
    await waitFor(
      "the delayed alarm cleared",
      () => alarmFrames("tc1_warm_delayed", "clear").length > 0,
      60_000,
    );

    // The event stream, in order: every tc1_temp sample and every alarm transition.
    const seq = sse.frames.filter((f) =>
      f.event === "alarm" ||
      (f.event === "state_update" && f.data.device_id === "tempctl0" &&
        f.data.signal_id === "tc1_temp")
    );
    const temps = (fs: ReceivedEvent[]) =>
      fs.filter((f) => f.event === "state_update").map((f) => f.data.value.double as number);
    const at = (id: string, transition: string) =>
      seq.findIndex((f) =>
        f.event === "alarm" && f.data.alarm_id === id && f.data.transition === transition
      );
    const raised = at("tc1_warm", "raise");
    const cleared = at("tc1_warm", "clear");
    assert.ok(0 < raised && raised < cleared);
    // Raised on the first sample past hi, not before and not later.
    const before = temps(seq.slice(0, raised));
    assert.ok(before.at(-1)! > HI, `raise after ${before.at(-1)}`);
    assert.ok(before.slice(0, -1).every((t) => t <= HI), before.join(", "));
    const raise = seq[raised]!.data;
    assert.deepEqual(
      [raise.state, raise.level, raise.cause, raise.limit, raise.value],
      ["active", "MINOR", "hi", HI, { type: "double", double: before.at(-1) }],
    );
    // Held while above hi - hysteresis (it came back below hi on the way), cleared on the first
    // sample below it.
    const during = temps(seq.slice(raised + 1, cleared));
    assert.ok(during.some((t) => t < HI && t >= HI - HYSTERESIS), during.join(", "));
    assert.ok(during.slice(0, -1).every((t) => t >= HI - HYSTERESIS), during.join(", "));
    assert.ok(during.at(-1)! < HI - HYSTERESIS, `clear after ${during.at(-1)}`);
    assert.deepEqual(seq[cleared]!.data.value, { type: "double", double: during.at(-1) });
    assert.equal(seq[cleared]!.data.state, "normal");

    // delay_ms: raised only once the condition had held that long, on a later sample.
    const delayed = (seq[at("tc1_warm_delayed", "raise")])!.data;
    assert.ok(at("tc1_warm_delayed", "raise") > raised);
    assert.ok(
      delayed.timestamp_ms - raise.timestamp_ms >= DELAY_MS,
      `${delayed.timestamp_ms - raise.timestamp_ms} ms`,
    );
    // Without hysteresis it cleared as soon as the temperature was back below hi.
    const delayedClear = (seq[at("tc1_warm_delayed", "clear")])!.data;
    assert.ok(delayedClear.value.double <= HI && delayedClear.value.double >= HI - HYSTERESIS);

    // GET /v0/alarms right after the raise.
    assert.equal(view.state, "active");
    assert.equal(view.level, "MINOR");
    assert.equal(view.cause, "hi");
    assert.equal(view.limit, HI);
    assert.equal(view.value.type, "double");
    assert.equal(view.since_epoch_ms, raise.timestamp_ms);
    assert.deepEqual(view.limits, { hi: HI });
    assert.equal(view.hysteresis, HYSTERESIS);
    assert.deepEqual(view.transitions.map((t: { transition: string }) => t.transition), ["raise"]);

    // Telemetry: a runtime_alarm row per transition, typed like a signal row.
    const rowOf = (transition: string) =>
      `runtime_alarm,runtime_name=lab1,alarm_id=tc1_warm,transition=${transition} `;
    await waitFor(
      "alarm rows written",
      () => recorder.lines.some((l) => l.startsWith(rowOf("clear"))),
      10_000,
    );
    const raiseRow = recorder.lines.find((l) => l.startsWith(rowOf("raise")))!;
    assert.equal(
      raiseRow,
      `${rowOf("raise")}state="active",level="MINOR",cause="hi",limit=${HI},` +
        `signal="sim0/tempctl0/tc1_temp",quality="OK",value_double=${raise.value.double} ` +
        `${raise.timestamp_ms}`,
    );
    assert.match(
      recorder.lines.find((l) => l.startsWith(rowOf("clear")))!,
      /state="normal",level="",cause="",signal="sim0\/tempctl0\/tc1_temp",quality="OK",value_double=/,
    );

    // The open run recorded each transition.
    const { events } = await service.runs.listEvents(run.run_id, {}) as {
      events: { category: string; type: string; payload: Record<string, unknown> }[];
    };
    const alarmRunEvents = events.filter((e) => e.category === "alarm");
    assert.deepEqual(
      alarmRunEvents.map((e) => `${e.payload.alarm_id} ${e.type}`),
      ["tc1_warm raise", "tc1_warm_delayed raise", "tc1_warm_delayed clear", "tc1_warm clear"],
    );
    assert.deepEqual(alarmRunEvents[0]!.payload, {
      alarm_id: "tc1_warm",
      state: "active",
      level: "MINOR",
      cause: "hi",
      limit: HI,
      signal: "sim0/tempctl0/tc1_temp",
      value: raise.value,
      quality: "OK",
      action: "none",
      message: raise.message,
      shelved_until_epoch_ms: null,
    });
  } finally {
    await sse.close();
    await service.stop();
    await recorder.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
