/**
 * A provider that is up but not ready (anolis executable profile v1 sec. 6): its host lacks what
 * it needs, so it comes up with no devices and says why in its WaitReady diagnostics
 * (`host_check: unmet`, `host_unmet`, and here `host_requirements` with the remedies). The runtime
 * -- a real `runtime` process over real provider processes -- starts anyway (no exit 3, so no
 * systemd restart loop), shows the unmet requirements in GET /v0/providers/health and /metrics,
 * and refuses AUTO while the device the tree names is missing. The console's Health view shows
 * the unmet requirements with their remedies, and each device's resource claims.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { assertApiAnswer } from "../helpers/openapi_check.ts";
import {
  type RuntimeChildOptions,
  startRuntimeChildOnFreePort,
} from "../helpers/runtime_process.ts";
import { T } from "../helpers/programmable_provider.ts";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";

const PROGRAMMABLE = new URL("../helpers/_programmable_provider.ts", import.meta.url).pathname;

const UNMET = [
  {
    id: "i2c.bus_present",
    status: "unmet",
    detail: "/dev/i2c-9 does not exist",
    remedy: "enable the I2C interface (dtparam=i2c_arm=on) and reboot",
  },
  { id: "i2c.bus_access", status: "unknown" },
];

/**
 * The machine: provider bus0 (up, no devices, host unmet) and temp0 (one device t0 claiming
 * CLAIM, host ok), automation with a tree naming temp0/t0 and bus0/ph_0, the API on `port`.
 * Returns the runtime's options.
 */
async function writeMachine(dir: string, port: number): Promise<RuntimeChildOptions> {
  await Deno.writeTextFile(
    `${dir}/bus0.json`,
    JSON.stringify({
      hello: { metadata: { supports_wait_ready: "true" } },
      waitReady: {
        diagnostics: {
          init_time_ms: "2",
          ready: "false",
          device_count: "0",
          host_check: "unmet",
          host_unmet: "i2c.bus_present: /dev/i2c-9 does not exist",
          host_requirements: JSON.stringify({ check_host_version: 1, requirements: UNMET }),
        },
      },
      devices: {},
    }),
  );
  await Deno.writeTextFile(
    `${dir}/temp0.json`,
    JSON.stringify({
      hello: { metadata: { supports_wait_ready: "true" } },
      waitReady: { diagnostics: { init_time_ms: "1", host_check: "ok" } },
      devices: {
        t0: { signals: [{ id: "temp", type: T.DOUBLE }], tags: { "anolis.claim": CLAIM } },
      },
    }),
  );
  await Deno.writeTextFile(
    `${dir}/tree.xml`,
    `<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main">
    <Sequence>
      <ReadSignal device_handle="temp0/t0" signal_id="temp" value="{t}" />
      <ReadSignal device_handle="bus0/ph_0" signal_id="ph" value="{ph}" />
    </Sequence>
  </BehaviorTree>
</root>
`,
  );
  const provider = (id: string) => `
  - id: ${id}
    command: ${JSON.stringify(Deno.execPath())}
    args: ["run", "--quiet", "--allow-read", "--allow-write", ${JSON.stringify(PROGRAMMABLE)}, ${
    JSON.stringify(`${dir}/${id}.json`)
  }]
    restart_policy: { enabled: true, max_attempts: 3, backoff_ms: [100, 100, 100], timeout_ms: 30000 }`;
  await Deno.writeTextFile(
    `${dir}/runtime.yaml`,
    `runtime:
  name: host-unmet
  data_dir: ${JSON.stringify(`${dir}/data`)}
http:
  bind: 127.0.0.1
  port: ${port}
providers:${provider("bus0")}${provider("temp0")}
polling:
  interval_ms: 200
automation:
  enabled: true
  behavior_tree: tree.xml
`,
  );
  return { config: `${dir}/runtime.yaml`, port };
}

const CLAIM = "i2c:/dev/i2c-1:0x48 gpio:4";

Deno.test("a provider reporting host_unmet stays up without devices; the runtime starts, shows why, and refuses AUTO", async () => {
  const dir = await Deno.makeTempDir({ prefix: "host-unmet-" });
  const rt = await startRuntimeChildOnFreePort((port) => writeMachine(dir, port));
  try {
    const get = async (path: string) => {
      const r = await fetch(`${rt.base}${path}`);
      const body = await r.text();
      if (path.startsWith("/v0/")) {
        assertApiAnswer({
          method: "GET",
          path,
          status: r.status,
          contentType: r.headers.get("content-type"),
          body,
        });
      }
      return body;
    };

    const health = JSON.parse(await get("/v0/providers/health"));
    const bus0 = health.providers.find((p: { provider_id: string }) => p.provider_id === "bus0");
    assert.equal(bus0.state, "AVAILABLE");
    assert.equal(bus0.lifecycle_state, "RUNNING");
    assert.equal(bus0.device_count, 0);
    assert.equal(bus0.degraded, true);
    assert.deepEqual(bus0.host_check, {
      status: "unmet",
      summary: "i2c.bus_present: /dev/i2c-9 does not exist",
      unmet: [{
        id: "i2c.bus_present",
        detail: "/dev/i2c-9 does not exist",
        remedy: "enable the I2C interface (dtparam=i2c_arm=on) and reboot",
      }],
    });
    const temp0 = health.providers.find((p: { provider_id: string }) => p.provider_id === "temp0");
    assert.deepEqual(temp0.host_check, { status: "ok", summary: "", unmet: [] });
    assert.deepEqual(temp0.devices.map((d: { claims: string[] }) => d.claims), [[
      "i2c:/dev/i2c-1:0x48",
      "gpio:4",
    ]]);
    assert.equal(temp0.degraded, false);

    const metrics = parsePrometheusText(await get("/metrics"));
    const value = (name: string, labels: Record<string, string>) =>
      sampleValue(metrics, name, labels);
    assert.equal(value("runtime_provider_host_unmet", { provider: "bus0" }), 1);
    assert.equal(value("runtime_provider_host_unmet", { provider: "temp0" }), 0);
    assert.equal(
      value("runtime_provider_host_requirement_unmet", {
        provider: "bus0",
        requirement: "i2c.bus_present",
        detail: "/dev/i2c-9 does not exist",
        remedy: "enable the I2C interface (dtparam=i2c_arm=on) and reboot",
      }),
      1,
    );
    assert.equal(value("runtime_provider_devices", { provider: "bus0" }), 0);

    // AUTO is refused while the device the tree names is missing, saying why.
    const post = (mode: string) =>
      fetch(`${rt.base}/v0/mode`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ mode }),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    assert.equal((await post("MANUAL")).status, 200);
    const auto = await post("AUTO");
    assert.equal(auto.status, 409, JSON.stringify(auto.body));
    assert.match(
      auto.body.status.message,
      // temp0/t0 is named too: the programmable provider answers its reads without a value.
      /refusing AUTO: the behavior tree names .*bus0\/ph_0 \(not in the inventory of provider bus0; its host check is unmet\)/,
    );

    assert.match(rt.stderr(), /bus0.*host requirements unmet: "i2c\.bus_present"/);
    // Still running: the SIGTERM it gets now is the first thing that ends it.
    assert.equal(await rt.stop(), 0);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "the console's Health view shows the unmet host requirements and each device's claims",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "host-unmet-console-" });
    const rt = await startRuntimeChildOnFreePort((port) => writeMachine(dir, port));
    const browser = await openChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await page.goto(`${rt.base}/`);
      await page.locator('.tabs a[href="#health"]').click();
      await waitForText(page, '[data-provider="bus0"] h3', /AVAILABLE/);
      const bus0 = await page.locator('[data-provider="bus0"]').textContent() ?? "";
      assert.match(bus0, /Host checkUNMET — up without devices/);
      assert.match(
        bus0,
        /i2c\.bus_present\/dev\/i2c-9 does not existenable the I2C interface \(dtparam=i2c_arm=on\) and reboot/,
      );
      const temp0 = await page.locator('[data-provider="temp0"]').textContent() ?? "";
      assert.match(temp0, /Host checkok/);
      assert.match(temp0, /i2c:\/dev\/i2c-1:0x48 gpio:4/);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
