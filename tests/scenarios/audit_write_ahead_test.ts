/**
 * An accepted actuating call is on disk before the provider receives it: the provider
 * (tests/scenarios/_audit_provider.ts, a real child process) reads the audit folder when the call
 * arrives and answers whether the call's tag was there; and a runtime (src/main.ts, a real child
 * process) killed with SIGKILL right after answering a call leaves the call in its journal, served
 * by GET /v0/audit after the next start.
 */
import assert from "node:assert/strict";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startServing } from "../helpers/kernel.ts";
import { REPO, testConfig } from "../helpers/sim_config.ts";
import {
  killProcessesNaming,
  providerYaml,
  startRuntimeOnFreePort,
  waitFor,
  writeRuntimeConfig,
} from "./process_helpers.ts";

const AUDIT_PROVIDER = `${REPO}tests/scenarios/_audit_provider.ts`;

/** `held`: the file its `hold_repeat` writes when it holds a call (writable by it). */
function auditProviderCommand(
  auditDir: string,
  held?: string,
): { command: string; args: string[] } {
  return {
    command: Deno.execPath(),
    args: held === undefined
      ? ["run", "--quiet", "--allow-read", AUDIT_PROVIDER, auditDir]
      : ["run", "--quiet", "--allow-read", `--allow-write=${held}`, AUDIT_PROVIDER, auditDir, held],
  };
}

function auditProvider(auditDir: string): ProviderConfig {
  return {
    id: "rec",
    ...auditProviderCommand(auditDir),
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

function act(tag: string) {
  return {
    provider_id: "rec",
    device_id: "rec0",
    function_id: 1,
    args: { tag: { type: "string", string: tag } },
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

/** Every line of every file of the audit folder. */
function journalText(auditDir: string): string {
  return [...Deno.readDirSync(auditDir)].map((e) => Deno.readTextFileSync(`${auditDir}/${e.name}`))
    .join("");
}

Deno.test("an accepted actuating call is in the audit journal when the provider receives it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_ahead_" });
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
    // Three different calls and a repeat of the last (the same decision, already on disk). The
    // provider's answer (`seen`: the tag was in the journal when the call arrived) is each
    // entry's result.
    const tags = ["tag-one-4f1c", "tag-two-9b2e", "tag-three-0d7a"];
    for (const tag of [...tags, tags[2]]) {
      const answer = await post(base, "/v0/call", act(tag!));
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
    }
    const page = await (await apiFetch(`${base}/v0/audit?device_id=rec0`)).json();
    const calls = page.entries.filter((e: { action: string }) => e.action === "call");
    assert.deepEqual(
      calls.map((e: { args: { tag: { string: string } }; count: number }) => [
        e.args.tag.string,
        e.count,
      ]),
      [[tags[0], 1], [tags[1], 1], [tags[2], 2]],
    );
    for (const e of calls) {
      assert.deepEqual(e.result, { seen: { type: "bool", bool: true } }, e.args.tag.string);
    }
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A runtime (src/main.ts) with the audit provider (`held`: its hold_repeat file) in MANUAL: `before`
 * acts on its API, then the runtime is SIGKILLed and started again; `after` reads the next one's
 * audit calls of rec0. Everything is stopped and removed after.
 */
async function killedAndRestarted(
  prefix: string,
  before: (base: string, dir: string) => Promise<void>,
  after: (calls: Record<string, unknown>[]) => void,
  o: { held?: boolean } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix });
  const auditDir = `${dir}/data/audit`;
  const held = o.held ? `${dir}/held` : undefined;
  const config = (port: number) =>
    writeRuntimeConfig(dir, {
      port,
      providers: providerYaml("rec", auditProviderCommand(auditDir, held)),
    });
  try {
    const first = await startRuntimeOnFreePort(config);
    const base = `http://127.0.0.1:${first.port}`;
    try {
      await waitFor("the provider AVAILABLE", async () => {
        const s = await (await apiFetch(`${base}/v0/runtime/status`)).json();
        return s.providers?.[0]?.state === "AVAILABLE";
      });
      assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
      await before(base, dir);
      first.rt.child.kill("SIGKILL");
      await first.rt.exit;
    } finally {
      await first.rt.dispose();
    }
    const second = await startRuntimeOnFreePort(config);
    try {
      const base2 = `http://127.0.0.1:${second.port}`;
      const page = await (await apiFetch(`${base2}/v0/audit?device_id=rec0`)).json();
      after(page.entries.filter((e: { action: string }) => e.action === "call"));
    } finally {
      second.rt.child.kill("SIGTERM");
      await second.rt.exit;
      await second.rt.dispose();
    }
  } finally {
    // A provider outlives a SIGKILLed runtime until it sees its stdin close.
    killProcessesNaming(auditDir);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a runtime killed with SIGKILL right after answering an actuating call leaves the call in its audit journal", async () => {
  await killedAndRestarted("audit_kill9_", async (base, dir) => {
    const answer = await post(base, "/v0/call", act("killed-right-after-7c3d"));
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.match(journalText(`${dir}/data/audit`), /killed-right-after-7c3d/);
  }, (calls) => {
    // The call's outcome never reached the journal, so the entry says what is known (sent to the
    // provider; its answer unknown).
    assert.equal(calls.length, 1, JSON.stringify(calls));
    assert.deepEqual(calls[0]!.args, {
      tag: { type: "string", string: "killed-right-after-7c3d" },
    });
    assert.equal(calls[0]!.outcome, "interrupted");
    assert.equal(calls[0]!.count, 1);
    assert.equal(calls[0]!.result, null);
    assert.match(String(calls[0]!.reason), /^the runtime ended after this call passed every check/);
  });
});

/**
 * A repeat of a call (the same decision as the open audit entry: nothing written ahead for it) is
 * on the wire when an e-stop latches: the e-stop's entry closes the open one, which is written
 * counting only the calls answered, and the runtime is SIGKILLed before the repeat is answered.
 * That call reached the provider, so the next start has it on the audit trail (docs/http-api.md,
 * "What a crash can lose": never a call that reached a provider), as an `interrupted` entry.
 */
Deno.test("a repeated call on the wire when an e-stop closed its entry is interrupted after a SIGKILL, not lost", async () => {
  const call = { ...act("repeat-on-the-wire-3b9d"), function_id: 4 }; // hold_repeat
  await killedAndRestarted("audit_repeat_kill_", async (base, dir) => {
    const answer = await post(base, "/v0/call", call);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    // The same call again while its entry is open: the provider holds it.
    void post(base, "/v0/call", call).catch(() => null);
    await waitFor("the repeat held by the provider", () => exists(`${dir}/held`));
    // The e-stop's entry closes the open one (count 1: the repeat is not answered).
    const stop = await post(base, "/v0/estop", { reason: "repeat on the wire" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    await waitFor("the e-stop's entry on disk", () => {
      try {
        return journalText(`${dir}/data/audit`).includes('"action":"estop"');
      } catch {
        return false;
      }
    });
  }, (calls) => {
    assert.deepEqual(
      calls.map((e) => [e.outcome, e.count]),
      [["accepted", 1], ["interrupted", 1]],
      "the repeat that reached the provider is missing from the audit trail",
    );
  }, { held: true });
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
