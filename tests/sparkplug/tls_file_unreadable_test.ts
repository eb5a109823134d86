/**
 * A Sparkplug TLS file the runtime cannot read when it starts the edge node (it grew past
 * READ_FILE_MAX_BYTES, or was replaced since the configuration was checked) stops the start with
 * an error naming the key and the path, as every other file the configuration names.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { READ_FILE_MAX_BYTES } from "../../src/host/mod.ts";

Deno.test("a sparkplug.tls.ca_file over READ_FILE_MAX_BYTES stops the start with an error naming the key and the path", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sparkplug-tls-file-" });
  try {
    const ca = `${dir}/ca.pem`;
    using f = await Deno.open(ca, { write: true, create: true });
    await f.truncate(READ_FILE_MAX_BYTES + 1); // sparse: nothing is written
    const config = testConfig({
      providers: [simProvider("sim0")],
      sparkplug: {
        enabled: true,
        brokerUrl: "mqtts://127.0.0.1:1",
        groupId: "lab",
        tls: { caPath: ca, certPath: null, keyPath: null },
      },
    });
    await assert.rejects(startRuntime(config), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(`^sparkplug\\.tls\\.ca_file: cannot read '${ca}': too large: `),
      );
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
