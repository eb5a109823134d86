/**
 * Differences from anolis that a client can detect and that no other test shows head-on
 * (docs/migrating-from-anolis.md lists every difference and what shows each). Driven over the
 * request handler of a real runtime with the simulated provider as a child process, automation
 * disabled, as an anolis deployment without automation runs.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, SIM_MAIN, simProvider, testConfig } from "../helpers/sim_config.ts";
import { runCli } from "../helpers/cli.ts";
import { formatSseFrame } from "../../src/http/mod.ts";

const DUTY = {
  provider_id: "sim0",
  device_id: "motorctl0",
  function_id: 10,
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
};
/** tempctl0 set_setpoint: policy category CONFIG. */
const SETPOINT = {
  provider_id: "sim0",
  device_id: "tempctl0",
  function_id: 2,
  args: { value: { type: "double", double: 30 } },
};

Deno.test("without automation the runtime has modes: it starts IDLE, refuses actuating and CONFIG calls until armed, and FAULT refuses them again", async () => {
  const fx = await startHttpFixture();
  try {
    const post = (path: string, body: unknown) => fx.request("POST", path, { body });
    // anolis: mode "MANUAL" in status, /v0/mode 503, calls never gated without automation.
    assert.equal((await fx.request("GET", "/v0/runtime/status")).json.mode, "IDLE");
    const mode = await fx.request("GET", "/v0/mode");
    assert.equal(mode.status, 200);
    assert.equal(mode.json.mode, "IDLE");
    for (const call of [DUTY, SETPOINT]) {
      const r = await post("/v0/call", call);
      assert.equal(r.status, 409, r.text);
      assert.match(r.json.status.message, /^Call blocked in IDLE mode: .* is actuating/);
    }
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await post("/v0/call", SETPOINT)).status, 200);
    assert.equal((await post("/v0/call", DUTY)).status, 200);
    // AUTO needs automation.
    const auto = await post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 409, auto.text);
    // FAULT refuses actuating calls (anolis lets manual calls through in FAULT).
    assert.equal((await post("/v0/mode", { mode: "FAULT" })).status, 200);
    const inFault = await post("/v0/call", DUTY);
    assert.equal(inFault.status, 409, inFault.text);
    assert.equal(inFault.json.status.code, "FAILED_PRECONDITION");
  } finally {
    await fx.close();
  }
});

Deno.test("an unknown provider or device is 404 in IDLE, before the IDLE gate", async () => {
  const fx = await startHttpFixture();
  try {
    for (
      const [body, message] of [
        [{ ...DUTY, provider_id: "nope" }, /Provider not found: nope/],
        [{ ...DUTY, device_id: "nope" }, /Device not found: sim0\/nope/],
      ] as const
    ) {
      const r = await fx.request("POST", "/v0/call", { body });
      assert.equal(r.status, 404, r.text);
      assert.match(r.json.status.message, message);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("a device whose poll fails keeps its last values in /v0/state, marked UNAVAILABLE", async () => {
  const fx = await startHttpFixture();
  try {
    await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    // tempctl0 just polled (OK): a loaded machine can leave a poll later than tc1_temp's 1.5 s
    // stale bound (STALE then, rightly), so wait for one (bounded).
    const before = await waitFor("tempctl0 at quality OK", async () => {
      const s = (await fx.request("GET", "/v0/state/sim0/tempctl0")).json;
      return s.quality === "OK" ? s : null;
    });
    assert.equal(before.quality, "OK");
    const injected = await fx.request("POST", "/v0/call", {
      body: {
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 1,
        args: {
          device_id: { type: "string", string: "tempctl0" },
          duration_ms: { type: "int64", int64: 60000 },
        },
      },
    });
    assert.equal(injected.status, 200, injected.text);
    const after = await waitFor("tempctl0 unavailable", async () => {
      const s = (await fx.request("GET", "/v0/state/sim0/tempctl0")).json;
      return s.quality === "UNAVAILABLE" ? s : null;
    });
    // anolis clears them; here every signal is still there, with its value and its age.
    assert.deepEqual(
      after.values.map((v: { signal_id: string }) => v.signal_id),
      before.values.map((v: { signal_id: string }) => v.signal_id),
    );
    for (const v of after.values) {
      assert.equal(v.quality, "UNAVAILABLE");
      assert.equal(typeof v.value.type, "string");
    }
  } finally {
    await fx.close();
  }
});

Deno.test("runtime needs --config (no default file) and knows --version, not -V", async () => {
  for (const args of [[], ["-V"]]) {
    const r = await runCli(args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /\n\nUsage:/);
  }
  assert.equal((await runCli(["--version"])).code, 0);
});

Deno.test("a bytes value goes out as {type: bytes, base64} on the event stream (anolis sends the raw text)", () => {
  const frame = formatSseFrame({
    id: 3,
    event: {
      kind: "state_update",
      provider_id: "p0",
      device_id: "d0",
      signal_id: "raw",
      value: { type: "bytes", base64: "AQID" },
      quality: "OK",
      timestamp_ms: 5,
    },
  }, "b00t");
  assert.equal(
    frame,
    'event: state_update\nid: b00t-3\ndata: {"provider_id":"p0","device_id":"d0","signal_id":"raw",' +
      '"value":{"type":"bytes","base64":"AQID"},"quality":"OK","timestamp_ms":5}\n\n',
  );
});

Deno.test("a provider runs in the configuration file's folder, not the runtime's working directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-cwd-" });
  try {
    const sim = `exec "${Deno.execPath()}" run --quiet --allow-read --allow-env "${SIM_MAIN}"`;
    const config = testConfig({
      providers: [{
        ...simProvider("sim0"),
        command: "sh",
        args: ["-c", `pwd > cwd.txt; ${sim} --config "${SIM_INERT_YAML}"`],
      }],
    });
    const rt = await startRuntime({ ...config, configPath: `${dir}/runtime.yaml`, configDir: dir });
    await rt.stop();
    assert.notEqual(Deno.cwd(), dir);
    assert.equal((await Deno.readTextFile(`${dir}/cwd.txt`)).trim(), await Deno.realPath(dir));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
