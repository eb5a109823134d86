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
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
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

/**
 * A TCP relay on 127.0.0.1 to `port` that counts the connections made through it: each is one
 * connection attempt of a client pointed at the relay (TLS passes through untouched).
 */
function countingRelay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const pipes: Promise<unknown>[] = [];
  let accepted = 0;
  const serving = (async () => {
    for await (const down of listener) {
      accepted++;
      conns.add(down);
      const up = await Deno.connect({ hostname: "127.0.0.1", port }).catch(() => null);
      if (up === null) {
        down.close();
        conns.delete(down);
        continue;
      }
      conns.add(up);
      pipes.push(
        down.readable.pipeTo(up.writable).catch(() => {}),
        up.readable.pipeTo(down.writable).catch(() => {}),
      );
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get accepted() {
      return accepted;
    },
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed by its pipe */ }
      }
      await serving;
      await Promise.allSettled(pipes);
    },
  };
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
    // The untrusted node connects through it: its attempts are counted there.
    const relay = countingRelay(broker.tlsPort);
    const config = (node: string, caPath: string | null, url: string) =>
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
      trusted = await startRuntime(
        config("tls-node", cert, `mqtts://localhost:${broker.tlsPort}`),
      );
      await waitFor(
        "NBIRTH over TLS",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/NBIRTH/tls-node`),
        15_000,
      );
      assert.equal(trusted.sparkplug?.connected, true);

      const { lines, log } = infoLines();
      untrusted = await startRuntime(
        config("untrusted-node", null, `mqtts://localhost:${relay.port}`),
        { host: { log } },
      );
      // Several attempts (a node that took the certificate would be connected at the first):
      // every one refused by certificate verification.
      await waitFor(
        "three connection attempts of the untrusted node",
        () => untrusted!.sparkplug?.connected || relay.accepted >= 3,
        15_000,
      );
      assert.equal(untrusted.sparkplug?.connected, false);
      assert.ok(
        lines.some((l) => l.startsWith("WARN") && l.includes("sparkplug broker connection: ")),
        `the refusal is WARNed: ${lines.filter((l) => l.includes("broker")).join(" | ")}`,
      );
      assert.ok(
        !host.messages.some((m) => m.topic.endsWith("/untrusted-node")),
        "nothing published without a trusted certificate",
      );
    } finally {
      await untrusted?.stop();
      await trusted?.stop();
      await relay.close();
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
