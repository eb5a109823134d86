/**
 * What the runtime relies on from a provider process, as one body of tests run against each
 * subject (provider_contract_test.ts): the in-process fake and real child processes. A case that
 * passes for a real child and fails for the fake means the fake lies; fix the fake.
 *
 * The runtime's own pieces talk to the subject: ProviderSession (spawn, Hello/WaitReady,
 * discovery) and AdppClient over the process's pipes, with the ProviderProcess semantics the
 * supervisor depends on (stdin EOF stops it with exit 0, SIGTERM stops it, SIGKILL ends it with
 * its signal, a dead process fails every request).
 */
import assert from "node:assert/strict";
import {
  AdppClient,
  type ProviderStatusError,
  StatusCode,
  type WireValue,
  WireValueType,
} from "../../src/adpp/mod.ts";
import {
  ADPP_PROTOCOL_VERSION,
  type ProviderProcess,
  type RuntimeError,
  type SpawnFn,
  type ValueType,
} from "../../src/common/mod.ts";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { MAX_FRAME_BYTES } from "../../src/provider_sdk/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

/** A provider under contract and the device, signal and calls the cases use. */
export interface ContractSubject {
  readonly name: string;
  readonly config: ProviderConfig;
  readonly spawn: SpawnFn;
  readonly device: string;
  /** A signal of `device` in its default read set, and its declared type. */
  readonly signal: { readonly id: string; readonly type: ValueType };
  /** An actuating call of `device` that succeeds. */
  readonly call: { readonly functionId: number; readonly args: Record<string, WireValue> };
  /** A call of `device` whose argument the provider refuses (INVALID_ARGUMENT). */
  readonly refused: { readonly functionId: number; readonly args: Record<string, WireValue> };
}

/** Bound on anything a provider should do at once (generous: 2 shared cores). */
const PROMPT_MS = 10_000;

const WIRE_TYPE: Readonly<Record<ValueType, number>> = {
  double: WireValueType.DOUBLE,
  int64: WireValueType.INT64,
  uint64: WireValueType.UINT64,
  bool: WireValueType.BOOL,
  string: WireValueType.STRING,
  bytes: WireValueType.BYTES,
};

/** A spawned subject with an ADPP client on its pipes; `close()` ends it whatever happened. */
interface Opened {
  readonly proc: ProviderProcess;
  readonly client: AdppClient;
  /** Everything it wrote to stderr, once stderr has ended. */
  readonly stderr: Promise<string>;
  request: AdppClient["request"];
  close(): Promise<void>;
}

function open(s: ContractSubject): Opened {
  const proc = s.spawn({ command: s.config.command, args: s.config.args, cwd: Deno.cwd() });
  const client = new AdppClient(proc.stdout, proc.stdin, { clock: systemClock });
  const stderr = new Response(proc.stderr).text();
  return {
    proc,
    client,
    stderr,
    request: (kind, payload, timeoutMs) => client.request(kind, payload, timeoutMs),
    async close() {
      await client.close();
      proc.kill("SIGKILL");
      await proc.exited;
      await stderr;
    },
  };
}

/** A session of the runtime's own (spawn, handshake, discovery) on the subject. */
function session(s: ContractSubject): ProviderSession {
  return new ProviderSession(s.config, s.config.command, {
    spawn: s.spawn,
    log: testLogger(),
    clock: systemClock,
    cwd: Deno.cwd(),
  });
}

/** The provider's status code of a rejection (a ProviderStatusError), else the error itself. */
function providerCode(err: unknown): number | unknown {
  return (err as ProviderStatusError).providerCode ?? err;
}

/** `p` within PROMPT_MS, or a failure naming `what`. */
async function promptly<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what}: not within ${PROMPT_MS} ms`)),
          PROMPT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the contract's cases for `s`. */
export function providerContract(s: ContractSubject): void {
  const t = (name: string, fn: () => Promise<void>) => Deno.test(`${s.name}: ${name}`, fn);

  t(
    "Hello names the protocol version, the provider and the stdio transport; WaitReady when advertised",
    async () => {
      const ses = session(s);
      try {
        const hello = await ses.handshake();
        assert.notEqual(hello.providerName, "");
        assert.notEqual(hello.providerVersion, "");
        assert.equal(hello.metadata.transport, "stdio+uint32_le");
        assert.equal(hello.metadata.max_frame_bytes, String(MAX_FRAME_BYTES));
      } finally {
        await ses.terminate(PROMPT_MS);
      }
      const o = open(s);
      try {
        await assert.rejects(
          o.request("hello", { protocol_version: "v0", client_name: "contract" }, PROMPT_MS),
          (e) => providerCode(e) === StatusCode.FAILED_PRECONDITION,
        );
        const hello = await o.request(
          "hello",
          { protocol_version: ADPP_PROTOCOL_VERSION },
          PROMPT_MS,
        );
        assert.equal(hello.protocol_version, ADPP_PROTOCOL_VERSION);
        if (hello.metadata?.supports_wait_ready === "true") {
          const ready = await o.request("wait_ready", { max_wait_ms_hint: 1000 }, PROMPT_MS);
          assert.equal(typeof ready, "object");
        } else {
          await assert.rejects(
            o.request("wait_ready", {}, PROMPT_MS),
            (e) => providerCode(e) === StatusCode.UNIMPLEMENTED,
          );
        }
      } finally {
        await o.close();
      }
    },
  );

  t(
    "discovery lists every device once and describes each as asked; an unknown one is NOT_FOUND",
    async () => {
      const ses = session(s);
      try {
        await ses.handshake();
        const devices = await ses.discover();
        assert.deepEqual(ses.discoveryWarnings, []);
        const ids = devices.map((d) => d.device.deviceId);
        assert.equal(new Set(ids).size, ids.length);
        assert.ok(ids.includes(s.device), `${s.device} in ${ids.join(", ")}`);
        const dev = devices.find((d) => d.device.deviceId === s.device)!;
        assert.deepEqual(
          dev.signals.find((x) => x.signalId === s.signal.id)?.valueType,
          s.signal.type,
        );
        assert.ok(dev.functions.some((f) => f.functionId === s.call.functionId));
        await assert.rejects(
          ses.request("describe_device", { device_id: "no_such_device" }),
          (e) => providerCode(e) === StatusCode.NOT_FOUND,
        );
      } finally {
        await ses.terminate(PROMPT_MS);
      }
    },
  );

  t(
    "ReadSignals answers the default set or the ids asked for, with timestamps and quality; unknown ones are NOT_FOUND",
    async () => {
      const o = open(s);
      try {
        const all = await o.request("read_signals", { device_id: s.device }, PROMPT_MS);
        assert.equal(all.device_id, s.device);
        const one = (all.values ?? []).find((v) => v.signal_id === s.signal.id);
        assert.ok(one, `${s.signal.id} in the default set`);
        for (const v of all.values ?? []) {
          assert.ok(
            v.timestamp !== undefined && Number(v.timestamp.seconds) > 1_600_000_000,
            v.signal_id,
          );
          assert.equal(v.quality, 1, `${v.signal_id}: QUALITY_OK`);
        }
        assert.equal(one.value?.type, WIRE_TYPE[s.signal.type]);
        const asked = await o.request(
          "read_signals",
          { device_id: s.device, signal_ids: [s.signal.id, "no_such_signal"] },
          PROMPT_MS,
        );
        assert.deepEqual(asked.values?.map((v) => v.signal_id), [s.signal.id]);
        await assert.rejects(
          o.request("read_signals", { device_id: s.device, signal_ids: ["nope"] }, PROMPT_MS),
          (e) => providerCode(e) === StatusCode.NOT_FOUND,
        );
        await assert.rejects(
          o.request("read_signals", { device_id: "no_such_device" }, PROMPT_MS),
          (e) => providerCode(e) === StatusCode.NOT_FOUND,
        );
      } finally {
        await o.close();
      }
    },
  );

  t(
    "Call answers OK; a refused argument is INVALID_ARGUMENT, an unknown function NOT_FOUND; the session stays usable",
    async () => {
      const o = open(s);
      try {
        const ok = await o.request("call", {
          device_id: s.device,
          function_id: s.call.functionId,
          args: s.call.args,
        }, PROMPT_MS);
        assert.equal(ok.device_id, s.device);
        await assert.rejects(
          o.request("call", {
            device_id: s.device,
            function_id: s.refused.functionId,
            args: s.refused.args,
          }, PROMPT_MS),
          (e) => providerCode(e) === StatusCode.INVALID_ARGUMENT,
        );
        await assert.rejects(
          o.request("call", { device_id: s.device, function_id: 999 }, PROMPT_MS),
          (e) => providerCode(e) === StatusCode.NOT_FOUND,
        );
        assert.equal(o.client.open, true);
        const again = await o.request("read_signals", { device_id: s.device }, PROMPT_MS);
        assert.ok((again.values ?? []).length > 0);
      } finally {
        await o.close();
      }
    },
  );

  t("GetHealth reports the provider and one entry per listed device", async () => {
    const o = open(s);
    try {
      const list = await o.request("list_devices", {}, PROMPT_MS);
      const health = await o.request("get_health", {}, PROMPT_MS);
      assert.equal(health.provider?.state, 1, "STATE_OK");
      assert.deepEqual(
        (health.devices ?? []).map((d) => d.device_id).sort(),
        (list.devices ?? []).map((d) => d.device_id).sort(),
      );
    } finally {
      await o.close();
    }
  });

  t("answers requests sent together, each by its request id", async () => {
    const o = open(s);
    try {
      const answers = await Promise.all([
        o.request("list_devices", {}, PROMPT_MS),
        ...Array.from(
          { length: 8 },
          () =>
            o.request(
              "read_signals",
              { device_id: s.device, signal_ids: [s.signal.id] },
              PROMPT_MS,
            ),
        ),
        o.request("get_health", {}, PROMPT_MS),
      ]);
      assert.ok(Array.isArray((answers[0] as { devices?: unknown[] }).devices));
      for (const a of answers.slice(1, 9)) {
        assert.deepEqual(
          (a as { values: { signal_id: string }[] }).values.map((v) => v.signal_id),
          [s.signal.id],
        );
      }
      assert.ok((answers[9] as { provider?: unknown }).provider !== undefined);
    } finally {
      await o.close();
    }
  });

  t("stdin EOF stops it: exit code 0, stdout and stderr end", async () => {
    const o = open(s);
    try {
      await o.request("list_devices", {}, PROMPT_MS);
      await o.client.close();
      assert.deepEqual(await promptly("exit after stdin EOF", o.proc.exited), {
        code: 0,
        signal: null,
      });
      assert.equal(typeof await promptly("stderr's end", o.stderr), "string");
      assert.equal((await promptly("the session's end", o.client.ended)).reason, "closed");
    } finally {
      await o.close();
    }
  });

  t("the runtime's terminate() ends it by closing stdin alone (no signal needed)", async () => {
    const lines: string[] = [];
    const ses = new ProviderSession(s.config, s.config.command, {
      spawn: s.spawn,
      log: {
        debug: () => {},
        info: () => {},
        warn: (m) => lines.push(m),
        error: (m) => lines.push(m),
        child() {
          return this;
        },
      },
      clock: systemClock,
      cwd: Deno.cwd(),
    });
    await ses.handshake();
    await ses.terminate(PROMPT_MS);
    assert.equal(ses.exitCode, 0);
    assert.deepEqual(lines, []);
  });

  t("SIGTERM stops it with exit code 0", async () => {
    const o = open(s);
    try {
      await o.request("list_devices", {}, PROMPT_MS);
      o.proc.kill("SIGTERM");
      assert.deepEqual(await promptly("exit after SIGTERM", o.proc.exited), {
        code: 0,
        signal: null,
      });
    } finally {
      await o.close();
    }
  });

  t("SIGKILL ends it at once with that signal; every request then fails UNAVAILABLE", async () => {
    const o = open(s);
    try {
      await o.request("list_devices", {}, PROMPT_MS);
      o.proc.kill("SIGKILL");
      assert.deepEqual(await promptly("exit after SIGKILL", o.proc.exited), {
        code: 137,
        signal: "SIGKILL",
      });
      const end = await promptly("the session's end", o.client.ended);
      assert.match(end.reason, /^(eof|transport_error)$/);
      await assert.rejects(
        o.request("list_devices", {}, PROMPT_MS),
        (e) => (e as RuntimeError).code === "UNAVAILABLE",
      );
      o.proc.kill("SIGKILL"); // once it has exited: a no-op
      o.proc.kill("SIGTERM");
    } finally {
      await o.close();
    }
  });
}
