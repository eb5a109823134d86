/**
 * Every device-facing endpoint and its error answers (docs/http-api.md: "Conventions", "Runtime,
 * providers, telemetry", "Devices and capabilities", "State", "Modes and calls"), through the
 * request handler over a real Runtime with the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import type { HttpServices } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  type FixtureResponse,
  type HttpFixture,
  startHttpFixture,
} from "../helpers/runtime_fixture.ts";

const OK = { code: "OK", message: "ok" };
const DUTY = {
  provider_id: "sim0",
  device_id: "motorctl0",
  function_id: 10,
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
};

function assertError(res: FixtureResponse, http: number, code: string, message: string | RegExp) {
  assert.equal(res.status, http, res.text);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(Object.keys(res.json), ["status"]);
  assert.equal(res.json.status.code, code);
  if (typeof message === "string") assert.equal(res.json.status.message, message);
  else assert.match(res.json.status.message, message);
}

/**
 * GET `path` until `fresh` holds of the answer (a device just polled: quality OK). A loaded
 * machine can delay the 100 ms polls past a signal's stale bound (1.5 s for tc1_temp), and the
 * answer is then STALE, rightly: the steps below check the answer about a device just polled, so
 * they wait for one (bounded by waitFor's 10 s).
 */
function getFresh(
  fx: HttpFixture,
  path: string,
  fresh: (res: FixtureResponse) => boolean,
): Promise<FixtureResponse> {
  return waitFor(
    `${path} with quality OK`,
    async () => {
      const r = await fx.request("GET", path);
      return r.status === 200 && fresh(r) ? r : null;
    },
    10000,
    50,
  );
}

Deno.test("HttpApi serves the device endpoints over a running simulated provider", async (t) => {
  const fx = await startHttpFixture();
  try {
    await t.step(
      "The API is handed the kernel's own services, run records and telemetry included",
      () => {
        const services: HttpServices = fx.runtime.services;
        assert.equal(services.config, fx.runtime.config);
        assert.equal(services.runs, fx.runtime.runs);
        assert.equal(services.telemetry, fx.runtime.telemetry);
        assert.equal(services.audit, fx.runtime.audit);
      },
    );

    await t.step("GET /v0/runtime/status reports version, mode, providers and e-stop", async () => {
      const r = await fx.request("GET", "/v0/runtime/status");
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.status, OK);
      assert.equal(r.json.version, "0.2.0");
      assert.equal(r.json.mode, "IDLE");
      assert.equal(typeof r.json.uptime_seconds, "number");
      assert.equal(r.json.polling_interval_ms, 100);
      assert.deepEqual(r.json.providers, [{
        provider_id: "sim0",
        state: "AVAILABLE",
        device_count: 5,
      }]);
      assert.equal(r.json.device_count, 5);
      // Unlatched; with no safe state configured the rung is "none" and every actuating
      // (non-READ) function of every device is uncovered.
      const actuating = fx.runtime.registry.hosts.flatMap((h) => h.devices)
        .flatMap((d) => d.functions).filter((f) => f.actuating).length;
      assert.ok(actuating >= 15);
      const { plan, unverified_devices, unverified_reasons, verification, ...estop } = r.json.estop;
      assert.deepEqual(estop, {
        latched: false,
        software_safe_state: "none",
        latched_at_epoch_ms: null,
        uncovered_actuating_functions: actuating,
        cause: null,
        cause_alarm_retired: null,
      });
      assert.deepEqual(plan.calls, []);
      assert.equal(plan.uncovered.length, actuating);
      assert.equal(unverified_devices.length, 5);
      assert.deepEqual(
        unverified_reasons.map((u: { device_handle: string }) => u.device_handle),
        unverified_devices,
      );
      assert.equal(verification, null);
    });

    await t.step(
      "GET /v0/providers/health gives every device its declared type_version and descriptor_tags",
      async () => {
        const r = await fx.request("GET", "/v0/providers/health");
        assert.equal(r.status, 200);
        const [p] = r.json.providers;
        assert.equal(p.provider_id, "sim0");
        assert.equal(p.state, "AVAILABLE");
        assert.equal(p.lifecycle_state, "RUNNING");
        assert.equal(typeof p.supervision.enabled, "boolean");
        assert.equal(p.devices.length, 5);
        for (const d of p.devices) {
          assert.deepEqual(
            Object.keys(d).sort(),
            [
              "claims",
              "descriptor_tags",
              "device_id",
              "fault_signal_count",
              "health",
              "last_poll_ms",
              "poll_period_ms",
              "registered",
              "reported",
              "stale_signal_count",
              "staleness_ms",
              "type_version",
            ],
          );
          assert.equal(d.type_version, "1.0", d.device_id);
        }
        const tags = Object.fromEntries(
          p.devices.map((d: { device_id: string; descriptor_tags: unknown }) => [
            d.device_id,
            d.descriptor_tags,
          ]),
        );
        assert.deepEqual(tags.motorctl0, { family: "sim", kind: "motor_control" });
        assert.deepEqual(tags.chaos_control, { family: "chaos", kind: "fault_injection" });
      },
    );

    await t.step(
      "GET /v0/devices lists devices in discovery order with display name and type",
      async () => {
        const r = await fx.request("GET", "/v0/devices");
        assert.equal(r.status, 200);
        assert.deepEqual(r.json.devices.map((d: { device_id: string }) => d.device_id), [
          "analogsensor0",
          "motorctl0",
          "relayio0",
          "tempctl0",
          "chaos_control",
        ]);
        assert.deepEqual(r.json.devices[1], {
          provider_id: "sim0",
          device_id: "motorctl0",
          display_name: "Sim Dual DC Motor Controller",
          type: "sim.dual_dc_motor",
        });
      },
    );

    await t.step(
      "GET /v0/devices/{p}/{d}/capabilities returns sorted signals and keyed args",
      async () => {
        const r = await fx.request("GET", "/v0/devices/sim0/motorctl0/capabilities");
        assert.equal(r.status, 200);
        assert.equal(r.json.provider_id, "sim0");
        assert.equal(r.json.device_id, "motorctl0");
        const { signals, functions } = r.json.capabilities;
        assert.deepEqual(signals.map((s: { signal_id: string }) => s.signal_id), [
          "motor1_duty",
          "motor1_speed",
          "motor2_duty",
          "motor2_speed",
        ]);
        // The provider's SignalSpec.unit when it declares one (speeds: rpm), and no member at
        // all when it does not (the duty has none): never a guessed unit.
        assert.deepEqual(signals[1], {
          signal_id: "motor1_speed",
          value_type: "double",
          label: "Motor 1 Speed",
          unit: "rpm",
          poll_hint_hz: 5,
          stale_after_ms: 800,
        });
        assert.deepEqual(signals[0], {
          signal_id: "motor1_duty",
          value_type: "double",
          label: "Motor 1 Duty",
          poll_hint_hz: 2,
          stale_after_ms: 1500,
        });
        assert.equal(functions.length, 1);
        const fn = functions[0];
        assert.equal(fn.function_id, 10);
        assert.equal(fn.name, "set_motor_duty");
        assert.equal(fn.category, "ACTUATE");
        assert.equal(fn.actuating, true);
        assert.equal(fn.args.motor_index.type, "int64");
        assert.equal(fn.args.motor_index.required, true);
        assert.equal(fn.args.motor_index.min, 1);
        assert.equal(fn.args.motor_index.max, 2);
        assert.equal(fn.args.duty.min, 0);
        assert.equal(fn.args.duty.max, 1);
      },
    );

    await t.step(
      "GET capabilities carries every declared unit, of signals and arguments",
      async () => {
        const temp = (await fx.request("GET", "/v0/devices/sim0/tempctl0/capabilities")).json
          .capabilities;
        const units = Object.fromEntries(
          temp.signals.map((
            s: { signal_id: string; unit?: string },
          ) => [s.signal_id, s.unit ?? null]),
        );
        // As sim-devices.md (the anolis simulator's declarations) gives them.
        assert.deepEqual(units, {
          control_mode: null,
          relay1_state: null,
          relay2_state: null,
          setpoint: "C",
          tc1_temp: "C",
          tc2_temp: "C",
        });
        const setSetpoint = temp.functions.find((f: { name: string }) => f.name === "set_setpoint");
        assert.equal(setSetpoint.args.value.unit, "C");
        const analog = (await fx.request("GET", "/v0/devices/sim0/analogsensor0/capabilities")).json
          .capabilities;
        for (const s of analog.signals) {
          assert.equal(s.unit, s.signal_id.startsWith("voltage_ch") ? "V" : undefined, s.signal_id);
        }
      },
    );

    await t.step("GET capabilities of a relayio device sorts functions by id", async () => {
      const r = await fx.request("GET", "/v0/devices/sim0/relayio0/capabilities");
      assert.deepEqual(
        r.json.capabilities.functions.map((f: { function_id: number }) => f.function_id),
        [1, 2, 3, 4],
      );
      // An arg without bounds carries neither min nor max.
      assert.deepEqual(Object.keys(r.json.capabilities.functions[0].args.enabled).sort(), [
        "required",
        "type",
      ]);
    });

    await t.step("GET capabilities of an unknown device is 404 Device not found", async () => {
      const r = await fx.request("GET", "/v0/devices/sim0/tempctl9/capabilities");
      assertError(r, 404, "NOT_FOUND", "Device not found: sim0/tempctl9");
      const p = await fx.request("GET", "/v0/devices/nope/tempctl0/capabilities");
      assertError(p, 404, "NOT_FOUND", "Device not found: nope/tempctl0");
    });

    await t.step("GET /v0/state lists only devices with pollable signals", async () => {
      // The device and the signal asserted below (tempctl0, tc1_temp) read OK.
      const r = await getFresh(fx, "/v0/state", (r) => {
        const temp = r.json.devices.find((d: { device_id: string }) => d.device_id === "tempctl0");
        const tc1 = temp?.values.find((v: { signal_id: string }) => v.signal_id === "tc1_temp");
        return temp?.quality === "OK" && tc1?.quality === "OK";
      });
      assert.equal(r.status, 200);
      assert.equal(typeof r.json.generated_at_epoch_ms, "number");
      const ids = r.json.devices.map((d: { device_id: string }) => d.device_id);
      assert.deepEqual(ids, ["analogsensor0", "motorctl0", "relayio0", "tempctl0"]);
      const temp = r.json.devices[3];
      assert.equal(temp.provider_id, "sim0");
      assert.equal(temp.quality, "OK");
      const tc1 = temp.values.find((v: { signal_id: string }) => v.signal_id === "tc1_temp");
      assert.equal(tc1.value.type, "double");
      assert.equal(typeof tc1.value.double, "number");
      assert.equal(tc1.quality, "OK");
      // Age since the runtime received the sample (its monotonic clock): a whole number of
      // milliseconds, never negative, well under the staleness bound of a device just polled.
      assert.ok(Number.isInteger(tc1.age_ms) && tc1.age_ms >= 0 && tc1.age_ms < 5000, tc1.age_ms);
      assert.deepEqual(Object.keys(tc1).sort(), [
        "age_ms",
        "quality",
        "signal_id",
        "timestamp_epoch_ms",
        "unit",
        "value",
      ]);
      // The unit beside the value, as the capabilities declare it; none for a signal without one.
      assert.equal(tc1.unit, "C");
      const relay = temp.values.find((v: { signal_id: string }) => v.signal_id === "relay1_state");
      assert.equal("unit" in relay, false);
    });

    await t.step(
      "GET /v0/state/{p}/{d} filters by repeated signal_id, ignoring unknown ids",
      async () => {
        const r = await getFresh(
          fx,
          "/v0/state/sim0/tempctl0?signal_id=tc2_temp&signal_id=relay1_state&signal_id=nope",
          (r) => r.json.quality === "OK",
        );
        assert.equal(r.status, 200);
        assert.equal(r.json.provider_id, "sim0");
        assert.equal(r.json.device_id, "tempctl0");
        assert.equal(r.json.quality, "OK");
        assert.deepEqual(r.json.values.map((v: { signal_id: string }) => v.signal_id), [
          "tc2_temp",
          "relay1_state",
        ]);
        assert.deepEqual(r.json.values[1].value, { type: "bool", bool: false });
        assert.equal(r.json.values[0].unit, "C");
        assert.equal("unit" in r.json.values[1], false);
        const all = await fx.request("GET", "/v0/state/sim0/tempctl0");
        assert.equal(all.json.values.length, 6);
      },
    );

    await t.step("GET /v0/state/{p}/{d} is 404 for an unknown device", async () => {
      const r = await fx.request("GET", "/v0/state/sim0/nope");
      assertError(r, 404, "NOT_FOUND", "Device not found: sim0/nope");
    });

    await t.step("GET /v0/state/{p}/{d} is 503 for a device without pollable signals", async () => {
      const r = await fx.request("GET", "/v0/state/sim0/chaos_control");
      assertError(r, 503, "UNAVAILABLE", /chaos_control/);
    });

    await t.step("POST /v0/call answers 409 for an actuating call in IDLE", async () => {
      const r = await fx.request("POST", "/v0/call", { body: DUTY });
      assertError(r, 409, "FAILED_PRECONDITION", /IDLE/);
    });

    await t.step("POST /v0/mode arms the runtime (MANUAL)", async () => {
      const r = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
      assert.deepEqual(r.json, { status: OK, mode: "MANUAL", hook_failures: [] });
    });

    await t.step("POST /v0/call runs a call and reports the post-call poll", async () => {
      const r = await fx.request("POST", "/v0/call", { body: DUTY });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, {
        status: OK,
        provider_id: "sim0",
        device_id: "motorctl0",
        function_id: 10,
        post_call_poll_triggered: true,
      });
      // The post-call poll already shows the new duty.
      const s = await fx.request("GET", "/v0/state/sim0/motorctl0?signal_id=motor1_duty");
      assert.deepEqual(s.json.values[0].value, { type: "double", double: 0.5 });
      await fx.request("POST", "/v0/call", {
        body: { ...DUTY, args: { ...DUTY.args, duty: { type: "double", double: 0 } } },
      });
    });

    await t.step("POST /v0/call answers 400 for a body that is not JSON", async () => {
      assertError(
        await fx.request("POST", "/v0/call", { body: "{nope" }),
        400,
        "INVALID_ARGUMENT",
        /^Invalid JSON: /,
      );
      assertError(
        await fx.request("POST", "/v0/call", { body: "[1]" }),
        400,
        "INVALID_ARGUMENT",
        "body: must be a JSON object",
      );
      assertError(
        await fx.request("POST", "/v0/call"),
        400,
        "INVALID_ARGUMENT",
        "body: missing, expected a JSON object",
      );
    });

    await t.step("POST /v0/call answers 400 naming a missing or mistyped field", async () => {
      const rows: Array<[unknown, string | RegExp]> = [
        [{ device_id: "motorctl0", function_id: 10 }, "provider_id: missing"],
        [
          { provider_id: 1, device_id: "motorctl0", function_id: 10 },
          "provider_id: must be a string",
        ],
        [{ provider_id: "sim0", function_id: 10 }, "device_id: missing"],
        [{ provider_id: "sim0", device_id: "motorctl0" }, /^function_id: missing/],
        [{ ...DUTY, function_id: "10" }, /^function_id: must be an integer/],
        [{ ...DUTY, function_id: 1.5 }, /^function_id: must be an integer/],
        [{ ...DUTY, function_id: -1 }, /^function_id: must be an integer/],
        [{ ...DUTY, function_id: 2 ** 32 }, /^function_id: must be an integer/],
        [{ ...DUTY, args: [] }, "args: must be an object of typed values"],
        [{ ...DUTY, args: { duty: { type: "double" } } }, 'args.duty: missing "double" member'],
        [{ ...DUTY, args: { duty: { double: 1 } } }, 'args.duty: missing "type"'],
        [
          { ...DUTY, args: { duty: { type: "float", float: 1 } } },
          /^args\.duty\.type: unknown value type/,
        ],
        [
          { ...DUTY, args: { raw: { type: "bytes", base64: "###" } } },
          /^args\.raw\.base64: must be base64/,
        ],
        [
          { ...DUTY, args: { n: { type: "int64", int64: 2 ** 60 } } },
          /^args\.n\.int64: must be an integer/,
        ],
      ];
      for (const [body, message] of rows) {
        assertError(
          await fx.request("POST", "/v0/call", { body }),
          400,
          "INVALID_ARGUMENT",
          message,
        );
      }
    });

    await t.step("POST /v0/call answers 404 for an unknown provider", async () => {
      const r = await fx.request("POST", "/v0/call", { body: { ...DUTY, provider_id: "simX" } });
      assertError(r, 404, "NOT_FOUND", /simX/);
    });

    await t.step("POST /v0/call answers 404 for an unknown device", async () => {
      const r = await fx.request("POST", "/v0/call", { body: { ...DUTY, device_id: "motorctl9" } });
      assertError(r, 404, "NOT_FOUND", "Device not found: sim0/motorctl9");
    });

    await t.step("POST /v0/call answers 400 for function_id 0", async () => {
      const r = await fx.request("POST", "/v0/call", { body: { ...DUTY, function_id: 0 } });
      assertError(r, 400, "INVALID_ARGUMENT", /missing function selector/);
    });

    await t.step("POST /v0/call answers 404 for a function the device does not have", async () => {
      const r = await fx.request("POST", "/v0/call", { body: { ...DUTY, function_id: 99 } });
      assertError(r, 404, "NOT_FOUND", /function_id 99/);
    });

    await t.step("POST /v0/call answers 400 for args that break the declared specs", async () => {
      const rows: Array<[Record<string, unknown>, RegExp]> = [
        [{ motor_index: DUTY.args.motor_index }, /^args\.duty: required argument missing/],
        [{ ...DUTY.args, extra: { type: "bool", bool: true } }, /^args\.extra: unknown argument/],
        [{ ...DUTY.args, duty: { type: "string", string: "x" } }, /^args\.duty: expected double/],
        [
          { ...DUTY.args, duty: { type: "double", double: 1.5 } },
          /^args\.duty: 1\.5 is above the maximum 1/,
        ],
        [
          { ...DUTY.args, motor_index: { type: "int64", int64: 0 } },
          /^args\.motor_index: 0 is below/,
        ],
      ];
      for (const [args, message] of rows) {
        const r = await fx.request("POST", "/v0/call", { body: { ...DUTY, args } });
        assertError(r, 400, "INVALID_ARGUMENT", message);
      }
    });

    await t.step("POST /v0/call maps a provider INVALID_ARGUMENT to 400", async () => {
      const r = await fx.request("POST", "/v0/call", {
        body: {
          provider_id: "sim0",
          device_id: "tempctl0",
          function_id: 1,
          args: { mode: { type: "string", string: "sideways" } },
        },
      });
      assertError(r, 400, "INVALID_ARGUMENT", /.+/);
    });

    await t.step("POST /v0/call maps a provider FAILED_PRECONDITION to 409", async () => {
      const setMode = (mode: string) =>
        fx.request("POST", "/v0/call", {
          body: {
            provider_id: "sim0",
            device_id: "tempctl0",
            function_id: 1,
            args: { mode: { type: "string", string: mode } },
          },
        });
      assert.equal((await setMode("closed")).status, 200);
      try {
        const r = await fx.request("POST", "/v0/call", {
          body: {
            provider_id: "sim0",
            device_id: "tempctl0",
            function_id: 3,
            args: { relay_index: { type: "int64", int64: 1 }, state: { type: "bool", bool: true } },
          },
        });
        assertError(r, 409, "FAILED_PRECONDITION", /.+/);
      } finally {
        assert.equal((await setMode("open")).status, 200);
      }
    });

    await t.step(
      "POST /v0/call answers 409 for an actuating call while the e-stop is latched",
      async () => {
        const e = await fx.request("POST", "/v0/estop", { body: { reason: "test" } });
        assert.equal(e.status, 200, e.text);
        assert.equal(e.json.latched, true);
        try {
          const r = await fx.request("POST", "/v0/call", { body: DUTY });
          assertError(r, 409, "FAILED_PRECONDITION", /.+/);
          const s = await fx.request("GET", "/v0/runtime/status");
          assert.equal(s.json.estop.latched, true);
          assert.equal(typeof s.json.estop.latched_at_epoch_ms, "number");
        } finally {
          const c = await fx.request("POST", "/v0/estop/clear");
          assert.deepEqual(c.json, { status: OK, latched: false });
        }
        // The e-stop entered FAULT and the clear did not re-arm: an operator must.
        assert.equal((await fx.request("GET", "/v0/mode")).json.mode, "FAULT");
        assertError(
          await fx.request("POST", "/v0/call", { body: DUTY }),
          409,
          "FAILED_PRECONDITION",
          /FAULT/,
        );
        const armed = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
        assert.equal(armed.status, 200, armed.text);
        assert.equal((await fx.request("POST", "/v0/call", { body: DUTY })).status, 200);
      },
    );

    await t.step("an unknown route or wrong method is 404 Route not found", async () => {
      assertError(
        await fx.request("GET", "/v0/nope"),
        404,
        "NOT_FOUND",
        "Route not found: GET /v0/nope",
      );
      assertError(
        await fx.request("DELETE", "/v0/devices"),
        404,
        "NOT_FOUND",
        "Route not found: DELETE /v0/devices",
      );
      assertError(
        await fx.request("POST", "/v0/devices"),
        404,
        "NOT_FOUND",
        "Route not found: POST /v0/devices",
      );
      assertError(
        await fx.request("GET", "/v0/call"),
        404,
        "NOT_FOUND",
        "Route not found: GET /v0/call",
      );
      assertError(await fx.request("GET", "/nope"), 404, "NOT_FOUND", "Route not found: GET /nope");
      assertError(
        await fx.request("GET", "/v0/devices/"),
        404,
        "NOT_FOUND",
        "Route not found: GET /v0/devices/",
      );
    });

    await t.step("path parameters are percent-decoded", async () => {
      const r = await fx.request("GET", "/v0/devices/sim0/%74empctl0/capabilities");
      assert.equal(r.status, 200);
      assert.equal(r.json.device_id, "tempctl0");
      assertError(
        await fx.request("GET", "/v0/state/sim0/%E0%A4%A"),
        400,
        "INVALID_ARGUMENT",
        /device_id/,
      );
    });

    await t.step(
      "a body over 64 KiB is refused with 400 before it reaches the router",
      async () => {
        const big = JSON.stringify({ ...DUTY, pad: "x".repeat(70 * 1024) });
        const r = await fx.request("POST", "/v0/call", { body: big });
        assertError(r, 400, "INVALID_ARGUMENT", "body: larger than the 65536-byte limit");
      },
    );
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call answers 503 while the provider is not available", async () => {
  // A runtime that was never started: providers are configured but not up.
  const fx = await startHttpFixture({ start: false });
  try {
    const r = await fx.request("POST", "/v0/call", { body: DUTY });
    assertError(r, 503, "UNAVAILABLE", /sim0/);
    const s = await fx.request("GET", "/v0/runtime/status");
    assert.deepEqual(s.json.providers, [{
      provider_id: "sim0",
      state: "UNAVAILABLE",
      device_count: 0,
    }]);
  } finally {
    await fx.close();
  }
});
