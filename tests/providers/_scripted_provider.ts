/**
 * A small ADPP provider for process tests, run as a real child process. One device `probe0` whose
 * string signals report this process's environment:
 *   env_runtime_api_token, env_influxdb_token, env_anolis_api_token, env_probe_marker,
 *   env_runtime_token_probe (the variable a test's http.tokens entry names in token_env)
 * (the value of RUNTIME_API_TOKEN, INFLUXDB_TOKEN, ANOLIS_API_TOKEN and PROBE_MARKER, or "<unset>").
 *
 * Misbehaviour is chosen on the command line:
 *   --log FILE                            append what happens to FILE, one line each:
 *                                         `pid N` at start, `helper N`, `hang OP`
 *   --hang hello|wait_ready|read_signals  never answer the first such request
 *   --hang-after-reads N                  answer N ReadSignals, then never answer another
 *   --spawn-helper                        start `sleep 1000` (a helper: the runtime's grandchild)
 *   --ignore-sigterm                      SIGTERM does nothing
 *   --ignore-stdin-eof                    keep running after stdin closes (the ADPP stop signal);
 *                                         logs `stdin_eof` when it does
 *   --say TEXT                            write TEXT as a line to stderr at start
 *   --safe-state-ms N                     declare a safe state that takes N ms to apply, then
 *                                         logs `safe REASON` (stdin_eof: the runtime closed the
 *                                         session; SIGINT/SIGTERM: a signal reached the provider);
 *                                         a provider killed meanwhile logs nothing
 */
import { parseArgs } from "node:util";
import {
  DeviceProvider,
  type ProviderHandler,
  runStdioProvider,
  serveProvider,
} from "../../src/provider_sdk/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    hang: { type: "string" },
    "hang-after-reads": { type: "string" },
    "spawn-helper": { type: "boolean" },
    "ignore-sigterm": { type: "boolean" },
    "ignore-stdin-eof": { type: "boolean" },
    log: { type: "string" },
    say: { type: "string" },
    "safe-state-ms": { type: "string" },
  },
});

function note(line: string): void {
  if (values.log) Deno.writeTextFileSync(values.log, `${line}\n`, { append: true });
}

note(`pid ${Deno.pid}`);
if (values.say !== undefined) console.error(values.say);
if (values["ignore-sigterm"]) Deno.addSignalListener("SIGTERM", () => {});
if (values["spawn-helper"]) {
  const helper = new Deno.Command("sleep", {
    args: ["1000"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  helper.unref();
  note(`helper ${helper.pid}`);
}

const hang = values.hang;
let readsLeft = values["hang-after-reads"] === undefined
  ? Infinity
  : Number(values["hang-after-reads"]);

/** A request that is never answered (the SDK serves one request at a time: the provider hangs). */
function never(op: string): Promise<never> {
  note(`hang ${op}`);
  setInterval(() => {}, 1 << 30); // keeps the event loop (and so the process) alive
  return new Promise<never>(() => {});
}

function env(name: string): string {
  return Deno.env.get(name) ?? "<unset>";
}

const devices = new DeviceProvider({
  name: "scripted-test",
  version: "0.0.1",
  ...(hang === "wait_ready" ? { waitReady: () => never("wait_ready") } : {}),
}, [{
  deviceId: "probe0",
  typeId: "test.probe",
  typeVersion: "1.0",
  label: "Environment probe",
  signals: [
    "RUNTIME_API_TOKEN",
    "INFLUXDB_TOKEN",
    "ANOLIS_API_TOKEN",
    "PROBE_MARKER",
    "RUNTIME_TOKEN_PROBE",
  ].map((
    name,
  ) => ({
    id: `env_${name.toLowerCase()}`,
    name,
    type: "string" as const,
    pollHintHz: 2,
    staleAfterMs: 5000,
    read: () => env(name),
  })),
  functions: [],
}]);

const safeStateMs = values["safe-state-ms"] === undefined ? null : Number(values["safe-state-ms"]);

const provider: ProviderHandler = {
  ...(safeStateMs === null ? {} : {
    applySafeState: async (reason) => {
      await new Promise((r) => setTimeout(r, safeStateMs));
      note(`safe ${reason}`);
    },
  }),
  hello: (req) => hang === "hello" ? never("hello") : devices.hello(req),
  waitReady: (req) => devices.waitReady(req),
  listDevices: (req) => devices.listDevices(req),
  describeDevice: (req) => devices.describeDevice(req),
  readSignals: (req) =>
    hang === "read_signals" || readsLeft-- <= 0 ? never("read_signals") : devices.readSignals(req),
  call: (req, ctx) => devices.call(req, ctx),
  getHealth: (req) => devices.getHealth(req),
};

if (values["ignore-stdin-eof"]) {
  await serveProvider(provider, { readable: Deno.stdin.readable, writable: Deno.stdout.writable });
  note("stdin_eof"); // the runtime's graceful stop reached it
  setInterval(() => {}, 1 << 30); // stay alive until killed
} else {
  await runStdioProvider(provider);
}
