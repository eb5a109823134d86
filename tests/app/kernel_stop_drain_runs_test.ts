/**
 * A stop halts the tree (its "automation" stage) and closes the API before it drains the HTTP
 * server: a POST /v0/runs or /v0/parameters whose body was still arriving when the stop began is
 * answered in that drain. A run opened then would record nothing and be left open by the run
 * records' stop (closed as abandoned at the next start), its 200 saying `open` moments before:
 * refused (409, as AUTO is then), no run opened. A parameter set then is set and audited (the audit
 * journal closes after the providers' stop): kept as ever, as in MANUAL with the tree not ticking.
 * Real kernel, real child, real HTTP.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { startServing } from "../helpers/kernel.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { simWithTargetTemp } from "../helpers/sim_config.ts";

/** POST `path` with `body` sent once the stop has begun (its body held until then). */
async function postInTheDrain(
  rt: Kernel,
  path: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown>; stopped: Promise<void> }> {
  const { answer, send } = await routedPost(rt, path);
  const stopped = rt.stop();
  send(JSON.stringify(body));
  const answered = await answer;
  return { ...answered, stopped };
}

function servingConfig() {
  const config = simWithTargetTemp();
  return { ...config, http: { ...config.http, port: 0 } };
}

Deno.test("Kernel.stop after a normal start: a POST /v0/runs answered in the HTTP drain is refused, no run opened", async () => {
  const rt = await startServing(servingConfig());
  let stopped: Promise<void> | null = null;
  try {
    const sent = await postInTheDrain(rt, "/v0/runs", { experiment_label: "late" });
    stopped = sent.stopped;
    assert.equal(rt.runs.openRunId(), null, `a run opened: ${JSON.stringify(sent.body)}`);
    assert.equal(sent.status, 409, JSON.stringify(sent.body));
    const status = sent.body.status as { code: string; message: string };
    assert.equal(status.code, "FAILED_PRECONDITION");
    assert.match(status.message, /^refusing to open a run: the runtime is stopping/);
    await stopped;
    stopped = null;
    // Nothing for the next start to close as abandoned.
    assert.equal(rt.runs.info().run_count, 0);
    const journal = await Deno.readTextFile(`${rt.config.runtime.dataDir}/runs.jsonl`)
      .catch((err) => err instanceof Deno.errors.NotFound ? "" : Promise.reject(err));
    assert.doesNotMatch(journal, /"op":"open"/);
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});

Deno.test("Kernel.stop after a normal start: a POST /v0/parameters answered in the HTTP drain is set and audited", async () => {
  const rt = await startServing(servingConfig());
  let stopped: Promise<void> | null = null;
  try {
    const sent = await postInTheDrain(rt, "/v0/parameters", { name: "target_temp", value: 50 });
    stopped = sent.stopped;
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    await stopped;
    stopped = null;
    assert.equal(rt.parameters!.list().find((p) => p.name === "target_temp")?.value, 50);
    const audit = [...Deno.readDirSync(`${rt.config.runtime.dataDir}/audit`)]
      .map((f) => Deno.readTextFileSync(`${rt.config.runtime.dataDir}/audit/${f.name}`))
      .join("");
    assert.match(audit, /"action":"parameter"[^\n]*target_temp/);
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
