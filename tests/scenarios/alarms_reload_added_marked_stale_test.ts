/**
 * An alarm a reload adds on a signal nothing read before, whose sample the cache already marked
 * STALE for its age (its provider's answers left it out past its bound): its delay runs from when
 * the sample went stale, not from the reload (docs/alarms.md, "Delay": "on a signal nothing read
 * before, from the reload (a stale sample: from when it went stale ...)"). A witness alarm of the
 * same delay, read since start on a signal of the same device left out of the same answers, went
 * stale at the same instant: both raise in the same evaluation, dated alike. The programmable
 * provider runs as a child process; the alarms are read over real HTTP.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { alarmsConfig, Api, program } from "./alarms_helpers.ts";

/** health.staleness.stale_after_ms: every signal of the probe is stale past it. */
const STALE_AFTER_MS = 500;
/** Long enough that the reload comes while the witness's delay runs, on a loaded machine. */
const DELAY_MS = 5000;
/** How long after the cache marked the sample STALE the reload comes (well past the instant). */
const RELOAD_AFTER_MS = 1500;

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE },
        { id: "witness", type: T.DOUBLE },
        { id: "aux", type: T.DOUBLE },
      ],
      values: [dbl("temp", 25), dbl("witness", 25), dbl("aux", 25)],
    },
  },
};

function alarm(id: string, signal: string): string {
  return `
  - { id: ${id}, signal: p0/probe/${signal}, hi: 80, delay_ms: ${DELAY_MS}, message: ${id} }`;
}

Deno.test("An alarm a reload adds on a sample already marked STALE runs its delay from when it went stale, not from the reload", async () => {
  const inventoryFile = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(INVENTORY));
  const before = alarmsConfig(`alarms:${alarm("witness_bad", "witness")}\n`, ["p0"]);
  const fx = await startHttpFixture({
    config: {
      providers: [programmableProvider("p0", inventoryFile)],
      health: { staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS } },
      ...before,
    },
  });
  try {
    const rt = fx.runtime;
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    const view = async (id: string) => (await api.get(`/v0/alarms/${id}`)).json.alarm;
    // The device keeps answering (aux), leaving temp and witness out: their kept samples go
    // stale together (one receipt, one bound) and the cache marks them STALE.
    await program(rt, "p0", "probe", { read: { values: [dbl("aux", 25)] } });
    await waitFor(
      "temp marked STALE in the cache",
      () => rt.cache.device("p0", "probe")?.signals.get("temp")?.quality === "STALE",
    );
    await waitFor(
      "the witness sees its bad input",
      async () => (await view("witness_bad")).bad_input,
    );
    await new Promise((r) => setTimeout(r, RELOAD_AFTER_MS));

    // The reload adds an alarm of the same delay on temp (nothing read it before).
    const after = alarmsConfig(
      `alarms:${alarm("temp_bad", "temp")}${alarm("witness_bad", "witness")}\n`,
      ["p0"],
    );
    await rt.reload({ ...rt.config, ...after });
    assert.equal(
      (await view("witness_bad")).state,
      "normal",
      "the reload came while the witness's delay ran (else this machine is too slow to tell)",
    );

    const witness = await waitFor("the witness raised", async () => {
      const a = await view("witness_bad");
      return a.state === "active" ? a : null;
    }, 20000);
    const added = await view("temp_bad");
    assert.equal(
      added.state,
      "active",
      "raised with the witness: its delay ran from the stale instant",
    );
    assert.deepEqual(
      [added.cause, added.quality, added.transitions.length],
      ["bad_quality", "STALE", 1],
    );
    assert.equal(
      added.transitions[0].at_epoch_ms,
      witness.transitions[0].at_epoch_ms,
      "raised in the witness's evaluation",
    );
  } finally {
    await fx.close();
    await Deno.remove(inventoryFile);
  }
});
