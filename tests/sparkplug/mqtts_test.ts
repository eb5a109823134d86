/**
 * `mqtts://` against a real Mosquitto TLS listener with a self-signed certificate: with
 * `sparkplug.tls.ca_file` naming it the edge node connects and births; without it the server's
 * certificate is refused (nothing is published, the node stays disconnected): TLS is verified, not
 * merely spoken.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { selfSignedCert } from "../http/_tls_certs.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";

function opensslMissing(): boolean {
  try {
    return !Deno.statSync("/usr/bin/openssl").isFile;
  } catch {
    console.warn("SKIPPED: /usr/bin/openssl is missing (apt-get install openssl)");
    return true;
  }
}

Deno.test({
  name:
    "mqtts:// with tls.ca_file: the edge node connects over TLS and births; without it the certificate is refused",
  ignore: mosquittoMissing() || opensslMissing(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-tls-" });
    const { cert, key } = await selfSignedCert(dir);
    const broker = await Mosquitto.start({ tls: { certFile: cert, keyFile: key } });
    const host = await sparkplugHost(broker.url, GROUP); // the plain listener of the same broker
    const url = `mqtts://localhost:${broker.tlsPort}`;
    const config = (node: string, caPath: string | null) =>
      testConfig({
        runtime: { name: node },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: url,
          groupId: GROUP,
          reconnectMs: 200,
          tls: { caPath, certPath: null, keyPath: null },
        },
      });
    let trusted: Kernel | null = null;
    let untrusted: Kernel | null = null;
    try {
      trusted = await startRuntime(config("tls-node", cert));
      await waitFor(
        "NBIRTH over TLS",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/NBIRTH/tls-node`),
        15_000,
      );
      assert.equal(trusted.sparkplug?.connected, true);

      untrusted = await startRuntime(config("untrusted-node", null));
      // Several reconnect attempts' worth: every one refused by certificate verification.
      await new Promise((r) => setTimeout(r, 3000));
      assert.equal(untrusted.sparkplug?.connected, false);
      assert.ok(
        !host.messages.some((m) => m.topic.endsWith("/untrusted-node")),
        "nothing published without a trusted certificate",
      );
    } finally {
      await untrusted?.stop();
      await trusted?.stop();
      await host.close();
      await broker.dispose();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "a reload after the Sparkplug CA file was renewed in place says it needs a restart (it said nothing: the file is read at start)",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-tls-renew-" });
    const { cert, key } = await selfSignedCert(dir);
    const broker = await Mosquitto.start({ tls: { certFile: cert, keyFile: key } });
    const config = testConfig({
      runtime: { name: "renew-node" },
      providers: [simProvider("sim0")],
      sparkplug: {
        enabled: true,
        brokerUrl: `mqtts://localhost:${broker.tlsPort}`,
        groupId: GROUP,
        reconnectMs: 200,
        tls: { caPath: cert, certPath: null, keyPath: null },
      },
    });
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config);
      await waitFor("connected over TLS", () => rt!.sparkplug?.connected, 15_000);
      const running = rt.config;
      assert.deepEqual((await rt.reload(running)).needsRestart, [], "nothing changed yet");
      // The CA renewed under the same path (as a certificate renewal does).
      const other = await Deno.makeTempDir({ prefix: "sparkplug-tls-renew-" });
      await Deno.copyFile((await selfSignedCert(other)).cert, cert);
      await Deno.remove(other, { recursive: true });
      // Before: [] -- "config reload: no change", the old CA kept until a restart.
      assert.deepEqual((await rt.reload(running)).needsRestart, [
        "sparkplug.tls.ca_file (file changed)",
      ]);
    } finally {
      await rt?.stop();
      await broker.dispose();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
