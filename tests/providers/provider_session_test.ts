/**
 * ProviderSession on its own (no host): a session the provider breaks ends, and its process is
 * killed.
 */
import assert from "node:assert/strict";
import { spawnProcess } from "../../src/host/mod.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { processAlive, testLogger, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";

async function session(inventory: object): Promise<{ s: ProviderSession; file: string }> {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const cfg = programmableProvider("p0", file);
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: testLogger(),
    monoMs: () => performance.now(),
    cwd: Deno.cwd(),
  });
  return { s, file };
}

Deno.test("ProviderSession ends and kills its process when the provider sends a frame that is no Response", async () => {
  const { s, file } = await session({
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }] } },
  });
  try {
    await s.handshake();
    await s.request("call", { device_id: "d0", function_id: 4 });
    const why = await s.ended;
    assert.match(why, /^session ended: /);
    await waitFor("process killed", () => s.exitCode !== null);
    assert.equal(s.exitCode, 128 + 9, "ended by SIGKILL");
    assert.equal(processAlive(s.pid), false);
  } finally {
    s.kill();
    await s.terminate(1000);
    await Deno.remove(file);
  }
});
