/**
 * Providers do not inherit the runtime's secrets: with RUNTIME_API_TOKEN and INFLUXDB_TOKEN in the
 * runtime's environment, a provider sees neither (its other variables pass through), while the
 * runtime itself still authenticates with the API token.
 */
import assert from "node:assert/strict";
import {
  killLeftovers,
  providerYaml,
  readScriptedLog,
  scriptedCommand,
  startRuntimeOnFreePort,
  waitFor,
  writeRuntimeConfig,
} from "./process_helpers.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

const API_TOKEN = "api-secret-4711";

/** The cached value of one of probe0's string signals, or null while not available. */
async function probeSignal(port: number, signal: string): Promise<string | null> {
  const r = await apiFetch(
    `http://127.0.0.1:${port}/v0/state/probe/probe0?signal_id=${signal}`,
    { headers: { authorization: `Bearer ${API_TOKEN}` } },
  ).catch(() => null);
  if (r === null) return null;
  if (!r.ok) return (await r.body?.cancel(), null);
  const body = await r.json();
  return body.values?.[0]?.value?.string ?? null;
}

Deno.test("a provider's environment holds none of RUNTIME_API_TOKEN, INFLUXDB_TOKEN, ANOLIS_API_TOKEN, and the API token still works", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-env-" });
  const log = `${dir}/provider.log`;
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      http: "  auth_enabled: true\n  auth_exempt_loopback: false\n",
      providers: providerYaml("probe", scriptedCommand(["--log", log])),
    });
  }, {
    env: {
      RUNTIME_API_TOKEN: API_TOKEN,
      INFLUXDB_TOKEN: "influx-secret-0815",
      ANOLIS_API_TOKEN: "anolis-secret-1234",
      PROBE_MARKER: "m1",
    },
  });
  try {
    const marker = await waitFor("probe state", () => probeSignal(port, "env_probe_marker"), 30000);
    assert.equal(marker, "m1", "the rest of the environment reaches the provider");
    assert.equal(await probeSignal(port, "env_runtime_api_token"), "<unset>");
    assert.equal(await probeSignal(port, "env_influxdb_token"), "<unset>");
    assert.equal(await probeSignal(port, "env_anolis_api_token"), "<unset>");
    const anonymous = await apiFetch(`http://127.0.0.1:${port}/v0/runtime/status`);
    await anonymous.body?.cancel();
    assert.equal(
      anonymous.status,
      401,
      "authentication is on, with the token from the environment",
    );
    rt.child.kill("SIGTERM");
    assert.equal((await rt.exit).code, 0);
  } finally {
    await rt.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
