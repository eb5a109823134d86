import { ok, strictEqual as equal } from "node:assert/strict";
import { encodeFrame, encodeRequest } from "../../src/adpp/mod.ts";
import { GOLDEN, unhex } from "../adpp/_golden.ts";
import { SIM_INERT_YAML, SimProcess, tempConfig } from "./_sim_process.ts";

async function exitAfter(sim: SimProcess, bytes: Uint8Array, close: boolean): Promise<number> {
  try {
    await sim.writeRaw(bytes);
    if (close) await sim.closeStdin();
    return await sim.exitCode();
  } finally {
    await sim.stop();
  }
}

Deno.test("sim exits 0 on stdin EOF before any prefix byte", async () => {
  const sim = SimProcess.start();
  try {
    // Serve one request first so the loop is known to be running.
    equal((await sim.request({ list_devices: {} })).status?.code, 1);
    await sim.closeStdin();
    equal(await sim.exitCode(), 0);
  } finally {
    await sim.stop();
  }
});

Deno.test("sim exits 2 on a zero-length frame", async () => {
  equal(await exitAfter(SimProcess.start(), new Uint8Array(4), false), 2);
});

Deno.test("sim exits 2 on EOF in the middle of a payload", async () => {
  const frame = encodeFrame(unhex(GOLDEN.helloRequest));
  equal(await exitAfter(SimProcess.start(), frame.slice(0, 12), true), 2);
});

Deno.test("sim exits 2 on EOF in the middle of a prefix", async () => {
  equal(await exitAfter(SimProcess.start(), new Uint8Array([0x1f, 0x00]), true), 2);
});

Deno.test("sim exits 2 on a length prefix over 1 MiB", async () => {
  // Prefix only, stdin left open: the sim must not wait for the 2 MiB payload.
  equal(await exitAfter(SimProcess.start(), new Uint8Array([0, 0, 0x20, 0]), false), 2);
});

Deno.test("sim exits 3 on a frame that is not a Request", async () => {
  const bytes = new Uint8Array([3, 0, 0, 0, 0xff, 0xff, 0xff]);
  equal(await exitAfter(SimProcess.start(), bytes, false), 3);
});

Deno.test("sim exits 42 after --crash-after", async () => {
  const sim = SimProcess.start(SIM_INERT_YAML, ["--crash-after", "0.3"]);
  try {
    equal((await sim.request({ list_devices: {} })).status?.code, 1);
    equal(await sim.exitCode(), 42);
  } finally {
    await sim.stop();
  }
});

Deno.test("sim exits 1 without --config", async () => {
  const sim = SimProcess.startWithArgs([]);
  try {
    equal(await sim.exitCode(), 1);
  } finally {
    ok((await sim.stop()).includes("--config"));
  }
});

Deno.test("sim exits 1 under startup_policy strict when a device fails to initialise", async () => {
  const path = await tempConfig(`
devices:
  - id: motorctl0
    type: motorctl
    max_speed: 20000
simulation:
  mode: inert
`);
  const sim = SimProcess.start(path);
  try {
    equal(await sim.exitCode(), 1);
  } finally {
    await sim.stop();
    await Deno.remove(path);
  }
});

Deno.test("sim exits 1 on a config without simulation.mode", async () => {
  const path = await tempConfig("devices: []\n");
  const sim = SimProcess.start(path);
  try {
    equal(await sim.exitCode(), 1);
  } finally {
    await sim.stop();
    await Deno.remove(path);
  }
});

Deno.test("sim --check-config exits 0 for the shipped config", async () => {
  const sim = SimProcess.startWithArgs(["--check-config", "examples/providers/sim/sim.yaml"]);
  try {
    equal(await sim.exitCode(), 0);
  } finally {
    await sim.stop();
  }
});

Deno.test("sim keeps serving after a request it answers with an error", async () => {
  const sim = SimProcess.start();
  try {
    await sim.writeRaw(encodeFrame(encodeRequest({ request_id: 5 }))); // no payload
    equal((await sim.readResponse()).status?.code, 14);
    equal((await sim.request({ list_devices: {} })).status?.code, 1);
  } finally {
    await sim.stop();
  }
});
