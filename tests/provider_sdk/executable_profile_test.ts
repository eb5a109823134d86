/**
 * The executable-profile envelopes and the start-up host check of DeviceProvider. The output
 * formats are those of the reference SDK (anolis-provider-sdk, src/anolis/provider_sdk/config.cpp:
 * two-space indented, declaration-order keys; host_check.cpp: one line, empty detail/remedy
 * omitted). Real child processes: tests/sim/executable_profile_test.ts.
 */
import assert from "node:assert/strict";
import {
  checkHostEnvelope,
  checkHostExitCode,
  configSchemaEnvelope,
  DeviceProvider,
  hostReadinessDiagnostics,
  type HostRequirement,
  ProviderConfigError,
  runProviderCli,
  WireProviderState,
  WireStatusCode,
} from "../../src/provider_sdk/mod.ts";
import { type Logger, MAX_NAMED_IN_WARNING, PROVIDER_TEXT_CHARS } from "../../src/common/mod.ts";
import { MAX_FRAME_BYTES, PROVIDER_STATUS_MESSAGE_CHARS } from "../../src/adpp/mod.ts";
import { serveRequests } from "./_harness.ts";

Deno.test("configSchemaEnvelope writes version, provider, extras and schema in that order, indented", () => {
  const text = configSchemaEnvelope(
    { type: "object", properties: { port: { type: "integer", minimum: 1 } }, required: [] },
    { provider: "p", extra: { provider_version: "1.2.3" } },
  );
  assert.equal(
    text,
    `{
  "config_schema_version": 1,
  "provider": "p",
  "provider_version": "1.2.3",
  "schema": {
    "type": "object",
    "properties": {
      "port": {
        "type": "integer",
        "minimum": 1
      }
    },
    "required": []
  }
}
`,
  );
  assert.equal(configSchemaEnvelope({}), '{\n  "config_schema_version": 1,\n  "schema": {}\n}\n');
});

Deno.test("configSchemaEnvelope refuses what is not a JSON object and reserved extra keys", () => {
  assert.throws(() => configSchemaEnvelope([] as never), /must be a JSON object/);
  assert.throws(() => configSchemaEnvelope({ a: { b: [1, NaN] } }), /schema\.a\.b\[1\] is NaN/);
  assert.throws(() => configSchemaEnvelope({ f: () => 1 }), /schema\.f is a function/);
  assert.throws(
    () => configSchemaEnvelope({}, { extra: { schema: "x" } }),
    /extra key 'schema' is reserved/,
  );
});

Deno.test("checkHostEnvelope is one line; empty detail and remedy are left out; unknown does not fail", () => {
  const reqs: HostRequirement[] = [
    { id: "bus.present", status: "met", detail: "/dev/i2c-1 exists", remedy: "" },
    { id: "bus.clock", status: "unknown" },
    { id: "bus.access", status: "unmet", detail: "cannot open", remedy: "add to group i2c" },
  ];
  assert.equal(
    checkHostEnvelope("p", reqs),
    '{"check_host_version":1,"provider":"p","requirements":[' +
      '{"id":"bus.present","status":"met","detail":"/dev/i2c-1 exists"},' +
      '{"id":"bus.clock","status":"unknown"},' +
      '{"id":"bus.access","status":"unmet","detail":"cannot open","remedy":"add to group i2c"}]}\n',
  );
  assert.equal(checkHostEnvelope("", []), '{"check_host_version":1,"requirements":[]}\n');
  assert.equal(checkHostExitCode(reqs), 1);
  assert.equal(checkHostExitCode(reqs.slice(0, 2)), 0);
  assert.throws(() => checkHostEnvelope("p", [{ id: "", status: "met" }]), /empty id/);
  assert.throws(
    () => checkHostEnvelope("p", [{ id: "x", status: "fine" as never }]),
    /status must be met, unmet or unknown/,
  );
});

Deno.test("checkHostEnvelope's refusal of an unknown status quotes the id and the status cut, on one line", () => {
  const text = `a'\n${"x".repeat(10_000)}`;
  const quoted = `"a'\\n${"x".repeat(PROVIDER_TEXT_CHARS - 3)}\u2026"`;
  assert.throws(
    () => checkHostEnvelope("p", [{ id: text, status: text as never }]),
    (e) => {
      assert.ok(e instanceof TypeError);
      assert.equal(
        e.message,
        `host requirement ${quoted}: status must be met, unmet or unknown, got ${quoted}`,
      );
      return true;
    },
  );
  assert.throws(
    () => checkHostEnvelope("p", [{ id: "x", status: 5 as never }]),
    /^TypeError: host requirement "x": status must be met, unmet or unknown, got a value of type number$/,
  );
});

Deno.test("hostReadinessDiagnostics says ok, or unmet with each unmet id and detail", () => {
  assert.deepEqual(hostReadinessDiagnostics([{ id: "a", status: "met" }]), { host_check: "ok" });
  assert.deepEqual(
    hostReadinessDiagnostics([
      { id: "a", status: "unmet", detail: "no /dev/x" },
      { id: "b", status: "unknown" },
      { id: "c", status: "unmet" },
    ]),
    { host_check: "unmet", host_unmet: "a: no /dev/x; c" },
  );
});

const relay = () =>
  new DeviceProvider(
    {
      name: "relay",
      version: "1.0.0",
      hostRequirements: [{ id: "gpio.present", status: "unmet", detail: "/dev/gpiochip9 missing" }],
    },
    [{
      deviceId: "relay0",
      typeId: "t.relay",
      typeVersion: "1",
      label: "Relay",
      signals: [{
        id: "on",
        name: "On",
        type: "bool",
        pollHintHz: 1,
        staleAfterMs: 0,
        read: () => false,
      }],
      functions: [],
    }],
  );

Deno.test("DeviceProvider with an unmet host requirement serves, not ready, and lists no devices", async () => {
  const { responses } = await serveRequests(relay(), [
    { request_id: 1, hello: { protocol_version: "v1" } },
    { request_id: 2, wait_ready: {} },
    { request_id: 3, list_devices: { include_health: true } },
    { request_id: 4, read_signals: { device_id: "relay0" } },
    { request_id: 5, get_health: {} },
  ]);
  assert.equal(responses[0]!.hello?.metadata?.supports_wait_ready, "true");
  const { init_time_ms, ...diagnostics } = responses[1]!.wait_ready?.diagnostics ?? {};
  // Required by the executable profile (sec. 3): the SDK fills it when the provider does not.
  assert.match(init_time_ms!, /^\d+$/);
  assert.deepEqual(diagnostics, {
    host_check: "unmet",
    host_unmet: "gpio.present: /dev/gpiochip9 missing",
    ready: "false",
  });
  assert.deepEqual(responses[2]!.list_devices?.devices ?? [], []);
  assert.equal(responses[3]!.status?.code, WireStatusCode.NOT_FOUND);
  assert.equal(
    responses[3]!.status?.message,
    "device not found: relay0 (not ready: host requirements unmet: gpio.present: " +
      "/dev/gpiochip9 missing)",
  );
  const provider = responses[4]!.get_health?.provider;
  assert.equal(provider?.state, WireProviderState.DEGRADED);
  assert.equal(
    provider?.message,
    "not ready: host requirements unmet: gpio.present: /dev/gpiochip9 missing",
  );
  assert.equal(provider?.metrics?.host_check, "unmet");
});

function capture(): { logger: Logger; lines: string[]; out: string[] } {
  const lines: string[] = [];
  const out: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level} ${m}`);
  const logger: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  };
  return { logger, lines, out };
}

Deno.test("runProviderCli: the last verb decides, a rejected config is 1 (serve) or 2 (check-host)", async () => {
  const served: string[] = [];
  const cli = (c: ReturnType<typeof capture>) => ({
    name: "p",
    version: "1.0.0",
    configSchema: { type: "object" },
    loadConfig: (path: string) => {
      if (path === "bad") throw new ProviderConfigError(["a: must be 1", "b: missing"]);
      return { path };
    },
    checkHost: () => [{ id: "x", status: "unmet", detail: "gone" } as HostRequirement],
    serve: (config: { path: string }, host: { requirements: readonly HostRequirement[] }) => {
      served.push(`${config.path} ${host.requirements.length}`);
      return 0;
    },
    logger: c.logger,
    stdout: (t: string) => Promise.resolve(void c.out.push(t)),
  });
  let c = capture();
  assert.equal(await runProviderCli(cli(c), ["--check-host", "a", "--config", "b"]), 0);
  assert.deepEqual(served, ["b 1"]);
  assert.match(
    c.lines.join("\n"),
    /warn host requirements unmet: x: gone; serving with no devices/,
  );
  c = capture();
  assert.equal(await runProviderCli(cli(c), ["--config", "bad"]), 1);
  assert.deepEqual(c.lines, ["error config: a: must be 1", "error config: b: missing"]);
  c = capture();
  assert.equal(await runProviderCli(cli(c), ["--check-host", "bad"]), 2);
  assert.deepEqual(c.out, []);
  c = capture();
  assert.equal(await runProviderCli(cli(c), ["--check-host", "ok"]), 1);
  assert.deepEqual(c.out, [
    '{"check_host_version":1,"provider":"p","requirements":[{"id":"x","status":"unmet","detail":"gone"}]}\n',
  ]);
  c = capture();
  assert.equal(await runProviderCli(cli(c), []), 1);
  assert.match(c.lines[0]!, /usage: --config <path> is required/);
});

Deno.test("runProviderCli names an unknown argument cut and quoted: 10 kB, a quote and control characters in it", async () => {
  const arg = `--x'"\r\n\u009b${"a".repeat(10_000)}`;
  const c = capture();
  const code = await runProviderCli({
    name: "p",
    version: "1.0.0",
    configSchema: { type: "object" },
    loadConfig: (path: string) => ({ path }),
    serve: () => 0,
    logger: c.logger,
    stdout: (t: string) => Promise.resolve(void c.out.push(t)),
  }, [arg]);
  assert.equal(code, 1);
  assert.equal(c.lines.length, 1);
  assert.ok(
    c.lines[0]!.startsWith(
      `error usage: unknown argument "--x'\\"\\r\\n\\u009b${
        "a".repeat(PROVIDER_TEXT_CHARS - 8)
      }\u2026" (verbs: `,
    ),
    c.lines[0]!.slice(0, 300),
  );
});

Deno.test("DeviceProvider cuts an unmet host requirement's detail too large to frame to PROVIDER_STATUS_MESSAGE_CHARS", async () => {
  const detail = "d".repeat(MAX_FRAME_BYTES);
  const provider = new DeviceProvider({
    name: "relay",
    version: "1.0.0",
    hostRequirements: [{ id: "gpio.present", status: "unmet", detail }],
  });
  const { code, responses } = await serveRequests(provider, [
    { request_id: 1, wait_ready: {} },
    { request_id: 2, get_health: {} },
  ]);
  assert.equal(code, 0, "the provider does not exit");
  assert.deepEqual(responses.map((r) => r.status?.code), [WireStatusCode.OK, WireStatusCode.OK]);
  const cut = `gpio.present: ${detail}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
  assert.equal(responses[0]!.wait_ready?.diagnostics?.host_unmet, cut);
  assert.equal(
    responses[1]!.get_health?.provider?.message,
    `not ready: host requirements unmet: ${cut}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
    "the whole message cut last, its prefix first",
  );
});

Deno.test("runProviderCli logs the first MAX_NAMED_IN_WARNING problems of a rejected config, one line each, and counts the rest", async () => {
  const problems = Array.from({ length: MAX_NAMED_IN_WARNING + 5 }, (_, i) => `k${i}: missing`);
  const c = capture();
  const code = await runProviderCli({
    name: "p",
    version: "1.0.0",
    configSchema: { type: "object" },
    loadConfig: (): { path: string } => {
      throw new ProviderConfigError(problems);
    },
    serve: () => 0,
    logger: c.logger,
    stdout: (t: string) => Promise.resolve(void c.out.push(t)),
  }, ["--config", "bad"]);
  assert.equal(code, 1);
  assert.deepEqual(c.lines, [
    ...problems.slice(0, MAX_NAMED_IN_WARNING).map((p) => `error config: ${p}`),
    `error config: and 5 more problems (${MAX_NAMED_IN_WARNING + 5} in all)`,
  ]);
});

Deno.test("ProviderConfigError's message names the first MAX_NAMED_IN_WARNING problems, each cut, and counts the rest; problems keeps them all", () => {
  const huge = "p".repeat(MAX_FRAME_BYTES + 1);
  const problems = [
    `k0: ${huge}`,
    ...Array.from({ length: MAX_NAMED_IN_WARNING + 4 }, (_, i) => `k${i + 1}: missing`),
  ];
  const err = new ProviderConfigError(problems);
  assert.deepEqual(err.problems, problems, "every problem kept for the CLI to log");
  const bound = (MAX_NAMED_IN_WARNING + 1) * (PROVIDER_STATUS_MESSAGE_CHARS + 10);
  assert.ok(err.message.length <= bound, `message of ${err.message.length} chars, bound ${bound}`);
  assert.equal(
    err.message,
    [
      `k0: ${huge}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
      ...problems.slice(1, MAX_NAMED_IN_WARNING),
    ].join("; ") + `; and 5 more problems (${MAX_NAMED_IN_WARNING + 5} in all)`,
  );
  const few = new ProviderConfigError(problems.slice(0, MAX_NAMED_IN_WARNING));
  assert.equal(
    few.message,
    problems.slice(0, MAX_NAMED_IN_WARNING).map((p, i) =>
      i === 0 ? p.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026" : p
    ).join("; "),
    "no count at the bound",
  );
});

Deno.test("hostReadinessDiagnostics builds host_unmet bounded: thousands of long details make PROVIDER_STATUS_MESSAGE_CHARS and a marker, not a RangeError", () => {
  // 600 unmet requirements sharing one 1,000,000-char detail: joined whole, 600 million chars,
  // more than the longest string V8 makes.
  const detail = "d".repeat(1_000_000);
  const requirements: HostRequirement[] = Array.from({ length: 600 }, (_, i) => ({
    id: `req${i}`,
    status: "unmet",
    detail,
  }));
  const { host_check, host_unmet } = hostReadinessDiagnostics(requirements);
  assert.equal(host_check, "unmet");
  assert.equal(host_unmet, `req0: ${detail}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026");
  // At the exact bound nothing is cut or marked; one past it is.
  const fit = (n: number) => [{ id: "x".repeat(n), status: "unmet" as const }];
  assert.equal(
    hostReadinessDiagnostics(fit(PROVIDER_STATUS_MESSAGE_CHARS)).host_unmet,
    "x".repeat(PROVIDER_STATUS_MESSAGE_CHARS),
  );
  assert.equal(
    hostReadinessDiagnostics(fit(PROVIDER_STATUS_MESSAGE_CHARS + 1)).host_unmet,
    "x".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
  );
  // Many short ones past the bound: the first ones, joined as before, then the marker.
  const short = Array.from({ length: 5000 }, (_, i) => ({
    id: `r${i}`,
    status: "unmet" as const,
    detail: "gone",
  }));
  const joined = short.map((r) => `${r.id}: ${r.detail}`).join("; ");
  assert.equal(
    hostReadinessDiagnostics(short).host_unmet,
    joined.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
  );
});
