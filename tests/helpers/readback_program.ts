/**
 * The scripted read-back provider of the verification tests (tests/safety/_readback_provider.ts,
 * raw frames in a real child) as an in-process program: a FakeProvider answering the same
 * script with the same raw payloads (values without a value, any quality, 64-bit integers beyond
 * 2^53), one request at a time as the child does. The script's format: _readback_provider.ts.
 */
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import { StatusCode } from "../../src/adpp/mod.ts";
import { ProviderError } from "../../src/provider_sdk/mod.ts";
import { FakeProvider } from "./fake_provider.ts";
import type { ProgramFactory } from "./in_process_provider.ts";
import { type DeviceScript, sample, WIRE_TYPE } from "./_readback_wire.ts";

export type { DeviceScript, ReadbackSample } from "./_readback_wire.ts";

/** The child's main module: the key of readbackProgram among in-process programs. */
export const READBACK_MAIN = new URL("../safety/_readback_provider.ts", import.meta.url).pathname;

/**
 * The program of READBACK_MAIN: `args` are the child's (SCRIPT_JSON [LOG_FILE]); the log file
 * gets the same lines.
 */
export const readbackProgram: ProgramFactory = (host) => {
  const script = JSON.parse(host.args[0] ?? "{}") as Record<string, DeviceScript>;
  const logFile = host.args[1];
  const log = (line: string) => {
    if (logFile) Deno.writeTextFileSync(logFile, `${line}\n`, { append: true });
  };
  const fake = new FakeProvider(
    Object.keys(script).map((deviceId) => ({
      deviceId,
      typeId: "test.readback",
      typeVersion: "",
      label: deviceId,
      signals: [],
      functions: [],
    })),
    { name: "readback-test", version: "0.0.1", host },
  );
  fake.answer("hello", {
    reply: {
      protocol_version: ADPP_PROTOCOL_VERSION,
      provider_name: "readback-test",
      provider_version: "0.0.1",
    },
  });
  // The child implements neither.
  const unimplemented = { error: { code: StatusCode.UNIMPLEMENTED, message: "not implemented" } };
  fake.answer("wait_ready", unimplemented);
  fake.answer("get_health", unimplemented);
  fake.answer("list_devices", {
    reply: { devices: Object.keys(script).map((device_id) => ({ device_id })) },
  });
  for (const [deviceId, dev] of Object.entries(script)) {
    fake.answer("describe_device", {
      reply: {
        device: { device_id: deviceId, type_id: "test.readback", label: deviceId },
        capabilities: {
          signals: Object.entries(dev.signals).map(([signal_id, t]) => ({
            signal_id,
            name: signal_id,
            value_type: WIRE_TYPE[t],
            poll_hint_hz: 0,
          })),
          functions: dev.actuate
            ? [{ function_id: 1, name: "set_output", policy: { category: 3 }, args: [] }]
            : [],
        },
      },
    }, deviceId);
    fake.answer("call", {
      reply: () => {
        log(`call ${deviceId} set_output`);
        if (dev.actuate === "unavailable") {
          throw new ProviderError(StatusCode.UNAVAILABLE, "scripted call failure");
        }
        return {};
      },
    }, deviceId);
    fake.answer("read_signals", {
      reply: async (req, n) => {
        log(`${deviceId} ${(req.signal_ids ?? []).join(",")}`);
        if (dev.delayMs) await host.sleep(dev.delayMs);
        if (n >= dev.reads.length && dev.then === "hang") return await host.hang();
        if (n >= dev.reads.length && dev.then === "fail") {
          throw new ProviderError(StatusCode.UNAVAILABLE, "scripted read failure");
        }
        const entry = dev.reads[Math.min(n, dev.reads.length - 1)] ?? {};
        const values = Object.entries(entry).map(([sid, s]) => sample(dev, sid, s));
        return { device_id: deviceId, values };
      },
    }, deviceId);
  }
  return fake;
};
