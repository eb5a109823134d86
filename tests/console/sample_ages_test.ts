/**
 * The Devices view's sample ages (console/devices.js) under a step of the browser's wall clock:
 * an age is the runtime's `age_ms` (or a streamed sample's) carried forward on the browser's
 * monotonic clock, so a step between two state reads never shows.
 */
import assert from "node:assert/strict";
import { DevicesView } from "../../console/devices.js";
import { signalKey } from "../../console/keys.js";

/** A cell's elements as plain objects: the view only sets their text. */
function fakeCell() {
  return {
    valueEl: { textContent: "" },
    qualityEl: { firstElementChild: { textContent: "OK" } },
    ageEl: { textContent: "" },
    receivedAt: null,
    streamed: 0,
  };
}

/** Runs `fn` with Date.now and performance.now answering `clocks.wall` and `clocks.mono`. */
async function withClocks(
  clocks: { wall: number; mono: number },
  fn: () => Promise<void>,
): Promise<void> {
  const dateNow = Date.now;
  const perfNow = performance.now;
  Date.now = () => clocks.wall;
  performance.now = () => clocks.mono;
  try {
    await fn();
  } finally {
    Date.now = dateNow;
    performance.now = perfNow;
  }
}

Deno.test("sample ages keep counting on the monotonic clock when the browser's wall clock steps", async () => {
  const clocks = { wall: 1_760_000_000_000, mono: 50_000 };
  const runtimeNow = 1_760_000_000_000 + 7; // the runtime's clock: 7 ms ahead of the browser's
  await withClocks(clocks, async () => {
    const view = new DevicesView({
      api: {
        get: () =>
          Promise.resolve({
            generated_at_epoch_ms: runtimeNow,
            devices: [{
              provider_id: "sim0",
              device_id: "tempctl0",
              values: [{
                signal_id: "temp",
                value: { type: "double", double: 1 },
                quality: "OK",
                age_ms: 500,
              }],
            }],
          }),
        post: () => Promise.resolve({}),
      },
      errorText: String,
      showRefreshError: () => {},
      loadHealth: () => Promise.resolve(),
    });
    const read = fakeCell();
    const streamed = fakeCell();
    view.cells.set(signalKey("sim0", "tempctl0", "temp"), read);
    view.cells.set(signalKey("sim0", "tempctl0", "flow"), streamed);
    // Streamed before the first read, with the browser's clock an hour ahead of the runtime's:
    // taken as just received (the runtime's clock is not known yet).
    clocks.wall += 3_600_000;
    view.showValue(
      signalKey("sim0", "tempctl0", "flow"),
      { type: "double", double: 2 },
      "OK",
      runtimeNow,
    );
    assert.equal(streamed.ageEl.textContent, "0.0 s");
    clocks.wall -= 3_600_000;
    await view.loadState();
    assert.equal(read.ageEl.textContent, "0.5 s");
    // A streamed sample received by the runtime 200 ms ago (its clock).
    view.showValue(
      signalKey("sim0", "tempctl0", "flow"),
      { type: "double", double: 2 },
      "OK",
      runtimeNow - 200,
    );
    assert.equal(streamed.ageEl.textContent, "0.2 s");

    // The browser's wall clock steps forward an hour (NTP, a suspended laptop), 1 s passes.
    clocks.wall += 3_600_000;
    clocks.mono += 1_000;
    view.tickAges();
    assert.equal(read.ageEl.textContent, "1.5 s", "age of the sample read");
    assert.equal(streamed.ageEl.textContent, "1.2 s", "age of the streamed sample");

    // ... and back two hours; another second passes.
    clocks.wall -= 7_200_000;
    clocks.mono += 1_000;
    view.tickAges();
    assert.equal(read.ageEl.textContent, "2.5 s", "age of the sample read");
    assert.equal(streamed.ageEl.textContent, "2.2 s", "age of the streamed sample");
  });
});

Deno.test("a streamed sample's age after the runtime's wall clock steps back is right from the next state read on, and a replayed sample keeps its own age", async () => {
  // The console carries the runtime's clock from each GET /v0/state (generated_at_epoch_ms) on
  // the monotonic clock; a streamed sample's timestamp_ms cannot reset it: a sample the runtime
  // replays after a reconnection (Last-Event-ID) is as old as it says.
  const clocks = { wall: 1_760_000_000_000, mono: 50_000 };
  let runtimeNow = 1_760_000_000_000;
  let flowAgeMs = 0;
  await withClocks(clocks, async () => {
    const view = new DevicesView({
      api: {
        get: () =>
          Promise.resolve({
            generated_at_epoch_ms: runtimeNow,
            devices: [{
              provider_id: "sim0",
              device_id: "tempctl0",
              values: [{
                signal_id: "flow",
                value: { type: "double", double: 2 },
                quality: "OK",
                age_ms: flowAgeMs,
              }],
            }],
          }),
        post: () => Promise.resolve({}),
      },
      errorText: String,
      showRefreshError: () => {},
      loadHealth: () => Promise.resolve(),
    });
    const sk = signalKey("sim0", "tempctl0", "flow");
    const streamed = fakeCell();
    view.cells.set(sk, streamed);
    await view.loadState();
    // A sample the runtime replays after a reconnection: received 8 s before now, by its clock.
    view.showValue(sk, { type: "double", double: 1 }, "OK", runtimeNow - 8_000);
    assert.equal(streamed.ageEl.textContent, "8.0 s", "a replayed sample keeps its age");
    // NTP steps the runtime's wall clock back an hour; 500 ms later a sample is streamed (its
    // age meanwhile is off by the step), 1.5 s later the refresh cycle reads the state.
    runtimeNow -= 3_600_000;
    clocks.mono += 500;
    runtimeNow += 500;
    view.showValue(sk, { type: "double", double: 3 }, "OK", runtimeNow);
    clocks.mono += 1_500;
    runtimeNow += 1_500;
    flowAgeMs = 1_500;
    await view.loadState();
    assert.equal(streamed.ageEl.textContent, "1.5 s", "the runtime's age_ms, from the read on");
    // From then on a streamed sample's age is by the runtime's clock as stepped.
    clocks.mono += 1_000;
    runtimeNow += 1_000;
    view.showValue(sk, { type: "double", double: 4 }, "OK", runtimeNow - 300);
    assert.equal(streamed.ageEl.textContent, "0.3 s");
  });
});
