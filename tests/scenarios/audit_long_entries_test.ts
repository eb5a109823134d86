/**
 * Entries with over-long fields are bounded when stored and always served: a provider's 100 KB
 * error message (tests/scenarios/_audit_provider.ts, a real child process; cut to
 * PROVIDER_STATUS_MESSAGE_CHARS where its answer is decoded, so the API's error is bounded too) and
 * a 40 KB refused argument, over real HTTP. Before, both lines were on disk but longer than what
 * GET /v0/audit read, and were silently left out: a provider could hide its own failures.
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_ENTRY_BYTES, AUDIT_MAX_TEXT_BYTES } from "../../src/audit/mod.ts";
import { PROVIDER_STATUS_MESSAGE_CHARS } from "../../src/adpp/mod.ts";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startServing } from "../helpers/kernel.ts";
import { REPO, testConfig } from "../helpers/sim_config.ts";

function auditProvider(auditDir: string): ProviderConfig {
  return {
    id: "rec",
    command: Deno.execPath(),
    args: ["run", "--quiet", "--allow-read", `${REPO}tests/scenarios/_audit_provider.ts`, auditDir],
    timeoutMs: 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: false,
      maxAttempts: 1,
      backoffMs: [100],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

async function post(base: string, path: string, body: unknown) {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

const encoder = new TextEncoder();

Deno.test("GET /v0/audit serves, bounded, the entries of a provider's 100 KB error and of a 40 KB refused argument", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_long_" });
  const auditDir = `${dir}/audit`;
  const config = testConfig({
    runtime: { dataDir: dir },
    http: { port: 0 },
    providers: [auditProvider(auditDir)],
  });
  const service = await startServing(config);
  try {
    const base = `http://127.0.0.1:${service.http!.port}`;
    assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
    const failed = await post(base, "/v0/call", {
      provider_id: "rec",
      device_id: "rec0",
      function_id: 2,
      args: {},
    });
    assert.equal(failed.json.status.code, "FAILED_PRECONDITION");
    // The provider's message is cut where its answer is decoded: the API's error is bounded.
    assert.equal(
      failed.json.status.message,
      `provider answered FAILED_PRECONDITION: ${
        `fail_long: ${"E".repeat(100_000)}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS)
      }\u2026`,
    );
    // An argument name of 40,000 characters: refused by validation, whose message names it.
    const longName = `n${"a".repeat(40_000)}`;
    const refused = await post(base, "/v0/call", {
      provider_id: "rec",
      device_id: "rec0",
      function_id: 3,
      args: { [longName]: { type: "string", string: "x" } },
    });
    assert.equal(refused.status, 400);
    // A refused argument value of 40,000 characters (IDLE refuses every actuating call).
    assert.equal((await post(base, "/v0/mode", { mode: "IDLE" })).status, 200);
    const longValue = await post(base, "/v0/call", {
      provider_id: "rec",
      device_id: "rec0",
      function_id: 3,
      args: { text: { type: "string", string: "v".repeat(40_000) } },
    });
    assert.equal(longValue.json.status.code, "FAILED_PRECONDITION");

    const page = await (await apiFetch(`${base}/v0/audit?device_id=rec0`)).json();
    const calls = page.entries.filter((e: { action: string }) => e.action === "call");
    assert.deepEqual(
      calls.map((e: { outcome: string; refused_by: string | null }) => [e.outcome, e.refused_by]),
      [["failed", null], ["refused", "validation"], ["refused", "mode"]],
    );
    const [fail, badName, badValue] = calls;
    // The failed call's reason is the API's error, already within the entry's text bound.
    assert.equal(fail.reason, `FAILED_PRECONDITION: ${failed.json.status.message}`);
    assert.ok(encoder.encode(fail.reason).length <= AUDIT_MAX_TEXT_BYTES);
    // A bounded field: the 40 KB name is cut where the refusal names it (validate_args), so the
    // reason is short and whole (no audit marker needed), the name cut with an ellipsis.
    assert.ok(encoder.encode(badName.reason).length <= AUDIT_MAX_TEXT_BYTES);
    assert.ok(badName.reason.length < 400, badName.reason);
    assert.match(
      badName.reason,
      /^INVALID_ARGUMENT: args\["naaaa[a]*…"\]: unknown argument for "echo"/,
    );
    assert.deepEqual(Object.keys(badValue.args), ["text"]);
    assert.match(badValue.args.text.string, /\[truncated: \d+ of 40000 bytes kept\]$/);
    // Every stored line is within the entry bound.
    for (const name of Deno.readDirSync(auditDir)) {
      for (const line of Deno.readTextFileSync(`${auditDir}/${name.name}`).split("\n")) {
        assert.ok(encoder.encode(line).length <= AUDIT_MAX_ENTRY_BYTES, `${line.length} bytes`);
      }
    }
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
