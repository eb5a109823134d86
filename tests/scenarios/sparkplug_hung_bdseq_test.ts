/**
 * A data_dir whose bdSeq file cannot be written (here its temporary file is a FIFO nobody reads:
 * open(2) waits for ever, as a hung disk or NFS mount would) must not keep the HTTP API -- and
 * its e-stop route -- from starting: the API is served before the Sparkplug edge node starts,
 * and the edge node's wait for its bdSeq store is bounded (tests/sparkplug/bdseq_start_test.ts).
 */
import assert from "node:assert/strict";
import { newKernel, tempDir, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { serveHttp } from "../../src/host/mod.ts";

Deno.test("a hung bdSeq store does not keep the HTTP API and POST /v0/estop from starting", async () => {
  const dataDir = tempDir("runtime-hung-bdseq-");
  await Deno.mkdir(`${dataDir}/sparkplug`);
  const fifo = `${dataDir}/sparkplug/bdseq.tmp`;
  const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
  assert.ok(made.success, "mkfifo");
  const rt = newKernel(
    testConfig({
      runtime: { name: "rig-hung", dataDir },
      providers: [simProvider("sim0")],
      // No broker is needed: the node never gets past its bdSeq store while the FIFO is unread.
      sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:9", groupId: "lab" },
    }),
    { serve: serveHttp },
  );
  const starting = rt.start();
  starting.catch(() => {});
  let released: Deno.FsFile | null = null;
  try {
    const http = await waitFor("the HTTP API served", () => rt.http, 15_000);
    // The save is still hung: nobody has opened the FIFO for reading.
    const res = await fetch(`http://127.0.0.1:${http.port}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "hung bdSeq store" }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 200);
    assert.equal(rt.estop.latched, true);
  } finally {
    // Lets the hung open(2) through (its write then fails on the FIFO: WARNed, the node goes on).
    released = await Deno.open(fifo, { read: true });
    await starting.catch(() => {});
    await rt.stop();
    released.close();
  }
});
