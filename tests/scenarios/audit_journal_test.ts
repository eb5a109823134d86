/**
 * The audit journal of the whole service (the Kernel with HTTP served, the simulated provider):
 * rotated at audit.max_file_bytes with audit.max_files kept and paged across files by
 * GET /v0/audit; the open run's events include the calls; a journal on a full disk leaves calls
 * and the e-stop working and shows in GET /v0/providers/health and /metrics; a clean stop ends
 * the journal with a closing record (the providers stopped first: no call in flight).
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import { startServing } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

function duty(value: number) {
  return {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: value } },
  };
}

async function post(base: string, path: string, body?: unknown) {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function get(base: string, path: string) {
  const r = await apiFetch(`${base}${path}`);
  return { status: r.status, json: await r.json() };
}

Deno.test("The service journals audit entries, rotates at audit.max_file_bytes and pages across files; run events include the calls", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_service_" });
  const config = testConfig({
    runtime: { dataDir: dir },
    http: { port: 0 },
    audit: { maxFileBytes: 4096, maxFiles: 3 },
  });
  const service = await startServing(config);
  try {
    const base = `http://127.0.0.1:${service.http!.port}`;
    assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
    const { run } = (await post(base, "/v0/runs", {})).json;
    const calls = 30;
    for (let k = 0; k < calls; k++) {
      assert.equal((await post(base, "/v0/call", duty(k / 100))).status, 200);
    }
    // Every page of 7 across the files, oldest first: the retained tail, in order.
    const entries = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; json: { entries: unknown[]; next_cursor: string | null } } =
        await get(base, `/v0/audit?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      assert.equal(page.status, 200);
      assert.ok(page.json.entries.length <= 7);
      entries.push(...page.json.entries);
      cursor = page.json.next_cursor;
    } while (cursor !== null);
    const names = [...Deno.readDirSync(`${dir}/audit`)].map((e) => e.name).sort();
    assert.equal(names.length, 3, names.join(", "));
    assert.ok(!names.includes("audit-00000001.jsonl"), "the oldest file was removed");
    for (const n of names) assert.ok(Deno.statSync(`${dir}/audit/${n}`).size <= 4096, n);
    // The entries on disk, without the calls' write-ahead records and the ids that settle them.
    const onDisk = names.flatMap((n) =>
      Deno.readTextFileSync(`${dir}/audit/${n}`).split("\n").filter(Boolean).map((l) =>
        JSON.parse(l)
      ).filter((e) => e.intent === undefined).map(({ intents: _, ...e }) => e)
    );
    assert.deepEqual(entries, onDisk);
    // deno-lint-ignore no-explicit-any
    const last = entries.at(-1) as any;
    assert.deepEqual(last.args.duty, { type: "double", double: (calls - 1) / 100 });
    assert.ok(entries.length < calls, "rotation removed the oldest entries");

    // The open run's events: one `call` event per call made during the run.
    const events = (await get(base, `/v0/runs/${run.run_id}/events?limit=1000`)).json.events;
    // deno-lint-ignore no-explicit-any
    const callEvents = events.filter((e: any) => e.category === "call");
    assert.equal(callEvents.length, calls);
    assert.equal(callEvents[0].type, "sim0/motorctl0 set_motor_duty");
    assert.deepEqual(callEvents[0].payload.origin, {
      kind: "http",
      address: "127.0.0.1",
      token_name: "anonymous",
    });
    assert.equal(callEvents[0].payload.outcome, "accepted");
    const health = (await get(base, "/v0/providers/health")).json.audit;
    assert.equal(health.journal, "ok");
    assert.equal(health.path, `${dir}/audit`);
    assert.equal(health.write_errors_total, 0);
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("The service with an audit journal on a full disk keeps calls and the e-stop working, reports it in health and metrics, and writes a gap entry that survives a restart once the disk has room", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_full_" });
  await Deno.mkdir(`${dir}/audit`);
  // Every write to the journal fails with ENOSPC, as on a full disk.
  await Deno.symlink("/dev/full", `${dir}/audit/audit-00000001.jsonl`);
  const config = testConfig({ runtime: { dataDir: dir }, http: { port: 0 } });
  let service = await startServing(config);
  try {
    const base = `http://127.0.0.1:${service.http!.port}`;
    assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await post(base, "/v0/call", duty(0.2))).status, 200);
    const stop = await post(base, "/v0/estop", { reason: "disk full test" });
    assert.equal(stop.status, 200);
    assert.equal(stop.json.latched, true);
    assert.equal(stop.json.fault_engaged, true);
    // A read waits for the queued writes (which fail) and answers what the journal holds.
    assert.deepEqual((await get(base, "/v0/audit")).json.entries, []);
    const health = (await get(base, "/v0/providers/health")).json.audit;
    assert.equal(health.journal, "failing");
    assert.ok(health.write_errors_total >= 1, JSON.stringify(health));
    assert.ok(health.dropped_total >= 4, JSON.stringify(health)); // mode, call, estop, FAULT
    assert.match(health.last_error, /No space left on device/);
    const metrics = await (await apiFetch(`${base}/metrics`)).text();
    const sample = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(metrics)?.[1]);
    assert.equal(sample("runtime_audit_write_errors_total"), health.write_errors_total);
    assert.equal(sample("runtime_audit_dropped_total"), health.dropped_total);
    assert.equal(sample("runtime_audit_entries_total"), health.entries_total);
    // Every entry lost so far is waiting for a gap entry.
    assert.equal(health.gap_pending, health.dropped_total);
    assert.equal(sample("runtime_audit_gap_pending"), health.dropped_total);
    const lost = health.dropped_total;

    // The disk has room again (the file replaced): the next entry is written, and before it (where
    // the loss began) one entry of action `gap` counting what was lost.
    await Deno.remove(`${dir}/audit/audit-00000001.jsonl`);
    assert.equal((await post(base, "/v0/estop/clear")).status, 200);
    const after = (await get(base, "/v0/audit")).json.entries;
    assert.deepEqual(after.map((e: { action: string }) => e.action), ["gap", "estop_clear"]);
    const gap = after[0];
    assert.equal(gap.count, lost);
    assert.equal(gap.outcome, "failed");
    assert.deepEqual(gap.origin, { kind: "runtime" });
    assert.match(gap.reason, new RegExp(`^${lost} entries were not journaled: .*No space left`));
    assert.ok(gap.first_time_epoch_ms <= gap.last_time_epoch_ms);
    const recovered = (await get(base, "/v0/providers/health")).json.audit;
    assert.equal(recovered.journal, "ok");
    assert.equal(recovered.gap_pending, 0);
    const metrics2 = await (await apiFetch(`${base}/metrics`)).text();
    assert.match(metrics2, /^runtime_audit_gap_pending 0$/m);

    // The count survives a restart: it is on disk.
    await service.stop();
    service = await startServing(config);
    const base2 = `http://127.0.0.1:${service.http!.port}`;
    const again = (await get(base2, "/v0/audit")).json.entries;
    assert.deepEqual(again.slice(0, 2), after);
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("A service stopped cleanly ends its audit journal with a closing record naming no call in flight, and the next start records nothing interrupted", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_close_" });
  const config = testConfig({ runtime: { dataDir: dir }, http: { port: 0 } });
  try {
    const first = await startServing(config);
    try {
      const base = `http://127.0.0.1:${first.http!.port}`;
      assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
      for (let k = 0; k < 5; k++) {
        assert.equal((await post(base, "/v0/call", duty(k / 10))).status, 200);
      }
    } finally {
      await first.stop();
    }
    const names = [...Deno.readDirSync(`${dir}/audit`)].map((e) => e.name).sort();
    const lines = Deno.readTextFileSync(`${dir}/audit/${names.at(-1)}`).split("\n").filter(Boolean);
    const closing = JSON.parse(lines.at(-1)!);
    assert.equal(typeof closing.clean_close, "number", lines.at(-1));
    assert.deepEqual(closing.open, [], "the providers were stopped first: every call settled");

    const second = await startServing(config);
    try {
      const base = `http://127.0.0.1:${second.http!.port}`;
      const page = (await get(base, "/v0/audit?limit=100")).json;
      assert.deepEqual(page.problems, []);
      // deno-lint-ignore no-explicit-any
      const outcomes = page.entries.map((e: any) => `${e.action} ${e.outcome}`);
      assert.ok(outcomes.includes("call accepted"), outcomes.join(", "));
      assert.ok(!outcomes.some((o: string) => o.endsWith("interrupted")), outcomes.join(", "));
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
