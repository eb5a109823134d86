/**
 * ProviderSession on its own (no host): a session the provider breaks ends, and its process is
 * killed. Its pieces: LineSplitter and readLines (provider stderr into lines).
 */
import assert from "node:assert/strict";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  LINE_SPLITTER_MAX_CHARS,
  LineSplitter,
  ProviderSession,
  readLines,
} from "../../src/providers/mod.ts";
import { processAlive, testLogger, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, SH_DEAF, SH_EXIT_3, T } from "../helpers/programmable_provider.ts";
import { byteStream } from "../helpers/byte_stream.ts";
import { PROVIDER_TEXT_CHARS, RuntimeError } from "../../src/common/mod.ts";
import {
  PROVIDER_STATUS_MESSAGE_CHARS,
  ProviderStatusError,
  StatusCode,
} from "../../src/adpp/mod.ts";

const D0 = { devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }] } } };

async function session(inventory: object): Promise<{ s: ProviderSession; file: string }> {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const cfg = programmableProvider("p0", file);
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: testLogger(),
    clock: systemClock,
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

/** A session of the programmable provider run under `sh -c script` (see programmable_provider). */
async function shSession(script: string, inventory: object = D0) {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const cfg = programmableProvider("p0", file, { sh: script });
  const lines: string[] = [];
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: capturingLogger({ level: "warn", now: () => 0, lines }).log,
    clock: systemClock,
    cwd: Deno.cwd(),
  });
  return { s, file, lines };
}

Deno.test("ProviderSession ends and kills its process when a request cannot be written", async () => {
  const { s, file, lines } = await shSession(SH_DEAF);
  try {
    await s.handshake();
    await s.request("call", { device_id: "d0", function_id: 3 }); // the provider exits
    // Nobody reads stdin any more: this request cannot be written.
    await waitFor("a failed write", async () => {
      await s.request("get_health", {}, 200).catch(() => {});
      return s.exitCode !== null;
    });
    assert.match(await s.ended, /^session ended: write failed: /);
    assert.equal(s.exitCode, 128 + 9, "ended by SIGKILL");
    assert.ok(lines.some((l) => /session broken \(transport_error\)/.test(l)));
  } finally {
    s.kill();
    await s.terminate(1000);
    await Deno.remove(file);
  }
});

Deno.test("ProviderSession.ended says with which code the process exited, or by which signal", async () => {
  const exited = await shSession(SH_EXIT_3);
  try {
    await exited.s.handshake();
    await exited.s.request("call", { device_id: "d0", function_id: 3 });
    assert.equal(await exited.s.ended, "process exited with code 3");
    assert.equal(exited.s.exitCode, 3);
  } finally {
    await exited.s.terminate(1000);
    await Deno.remove(exited.file);
  }
  const signalled = await shSession(SH_EXIT_3);
  try {
    await signalled.s.handshake();
    Deno.kill(signalled.s.pid, "SIGTERM"); // sh only: the provider under it holds stdout
    assert.equal(await signalled.s.ended, "process ended by SIGTERM");
  } finally {
    await signalled.s.terminate(1000);
    await Deno.remove(signalled.file);
  }
});

Deno.test("ProviderSession.terminate: a provider finishing the requests in hand after its stdin closed writes its answers into a pipe still read, and exits on its own", async () => {
  // Two requests in hand when the session is closed, answered 300 and 900 ms later; the provider
  // then exits 1500 ms after its stdin closed. Its stdout is read (the answers dropped) until it
  // closes: had the runtime stopped reading at the first answer, the second would meet a closed
  // pipe (EPIPE; a C provider dies of SIGPIPE) -- the provider host test that stops a restart's
  // discovery saw this as the provider's "BrokenPipe" on its stderr.
  const signals = [{ id: "x", type: T.DOUBLE }];
  const described = await Deno.makeTempFile();
  const { s, file, lines } = await shSession("exec PROVIDER", {
    devices: { a: { signals }, b: { signals, readDelayMs: 900 } },
    describeDelayMs: 300,
    describedFile: described,
    exitDelayMs: 1500,
  });
  try {
    await s.handshake();
    const answers = [
      s.request("read_signals", { device_id: "b", signal_ids: [] }),
      s.request("describe_device", { device_id: "a" }),
    ].map((p) => p.then(() => "answered", String));
    // Written in order: the provider has both once it started describing `a`.
    await waitFor("both requests in hand", async () => await Deno.readTextFile(described) !== "");
    await s.terminate(10_000);
    assert.deepEqual(lines.filter((l) => /stderr|pipe/i.test(l)), [], "the provider said nothing");
    assert.equal(s.exitCode, 0, "it exited on its own, with code 0");
    for (const a of await Promise.all(answers)) assert.match(a, /session ended: closed/);
  } finally {
    s.kill();
    await Deno.remove(file);
    await Deno.remove(described);
  }
});

/** A session with an SDK provider child (a module next to this file), its log lines kept. */
function sdkChildSession(
  module: string,
  level: "warn" | "debug",
  lines: string[],
): ProviderSession {
  const main = new URL(module, import.meta.url).pathname;
  return new ProviderSession(
    {
      ...programmableProvider("p0", "unused"),
      command: Deno.execPath(),
      args: ["run", "--quiet", main],
    },
    Deno.execPath(),
    {
      spawn: spawnProcess,
      log: capturingLogger({ level, now: () => 0, lines }).log,
      clock: systemClock,
      cwd: Deno.cwd(),
    },
  );
}

Deno.test("ProviderSession names text a provider printed to its stdout, not a frame of gigabytes", async () => {
  // An SDK provider whose call handler does console.log: the text lands between the ADPP frames.
  // Its first four bytes read as a length prefix of ~1.6 GB; the session broke with only that
  // ("frame length 1601463667 exceeds 1048576"), which sends an operator after a provider
  // answering with huge frames, not after a print in a handler.
  const lines: string[] = [];
  const s = sdkChildSession("./_printing_sdk_provider.ts", "warn", lines);
  try {
    await s.handshake();
    const call = s.request("call", {
      device_id: "d0",
      function_id: 1,
      args: { on: { type: T.BOOL, bool_value: true } },
    }).then(() => "answered", String);
    const why = await s.ended;
    assert.match(await call, /session ended/);
    const broken = lines.find((l) => /session broken \(protocol_violation\)/.test(l));
    assert.ok(broken, lines.join("\n"));
    assert.match(why, /text, not an ADPP frame/);
    assert.match(why, /"set_on called, on=true\\n"/, "the printed text, quoted");
    assert.match(broken, /text, not an ADPP frame .*"set_on called, on=true\\n"/);
  } finally {
    s.kill();
    await s.terminate(1000);
  }
});

Deno.test("ProviderSession gets INTERNAL, cut, from an SDK provider whose handler throws an error too large to frame, and stays up", async () => {
  // The SDK put the whole message into the reply: over MAX_FRAME_BYTES it could not be framed, the
  // provider exited 4 (SERIALIZE) and the call ended with the session instead of INTERNAL.
  const lines: string[] = [];
  const s = sdkChildSession("./_huge_error_sdk_provider.ts", "debug", lines);
  try {
    await s.handshake();
    const failed = await s.request("call", { device_id: "d0", function_id: 1, args: {} })
      .then(() => null, (err: unknown) => err);
    assert.ok(failed instanceof ProviderStatusError, String(failed).slice(0, 200));
    assert.equal(failed.providerCode, StatusCode.INTERNAL);
    // The SDK cut it to PROVIDER_STATUS_MESSAGE_CHARS and marked the cut, as the runtime would.
    const sent = `internal error: ${"e".repeat(PROVIDER_STATUS_MESSAGE_CHARS)}`
      .slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
    assert.equal(failed.message, `provider answered INTERNAL: ${sent}`);
    const read = await s.request("read_signals", { device_id: "d0" });
    assert.equal(read.device_id, "d0", "the provider still serves");
    assert.ok(
      lines.some((l) => l.includes("ERROR [huge-error] request ") && l.includes("internal error")),
      lines.map((l) => l.slice(0, 120)).join("\n"),
    );
  } finally {
    s.kill();
    await s.terminate(1000);
  }
});

Deno.test("ProviderSession has no discovery warnings before discovery", async () => {
  const { s, file } = await shSession("exec PROVIDER");
  try {
    assert.deepEqual(s.discoveryWarnings, []);
    assert.equal(s.hello, null);
    assert.equal(s.supportsGetHealth, null);
  } finally {
    await s.terminate(1000);
    await Deno.remove(file);
  }
});

Deno.test("ProviderSession refuses to start a command it cannot spawn naming the command once, cut and quoted, whatever its length or characters", () => {
  // A configured command of 10 kB holding a quote, ESC and a line break: spawned for real.
  const command = `/nonexistent/provider-"quoted"\u001b[31m\n${"x".repeat(10_000)}`;
  const cfg = { ...programmableProvider("p0", "/nonexistent/inventory.json"), command };
  let err: unknown = null;
  try {
    new ProviderSession(cfg, command, {
      spawn: spawnProcess,
      log: testLogger(),
      clock: systemClock,
      cwd: Deno.cwd(),
    });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof RuntimeError);
  assert.equal(err.code, "UNAVAILABLE");
  const cut = command.slice(0, PROVIDER_TEXT_CHARS);
  // Quoted as JSON (the quote and the controls escaped), cut, and the spawn's reason after it.
  assert.ok(
    err.message.startsWith(`cannot start provider 'p0' (${JSON.stringify(`${cut}\u2026`)}): `),
    err.message,
  );
  assert.match(err.message, /\): Failed to spawn: \S/);
  assert.equal(err.message.includes("x".repeat(PROVIDER_TEXT_CHARS)), false, "named once, cut");
  // deno-lint-ignore no-control-regex
  assert.equal(/[\x00-\x1f]/.test(err.message), false, err.message);
});

/** The lines LineSplitter makes of `chunks`. */
function split(chunks: string[]): string[] {
  const out: string[] = [];
  const splitter = new LineSplitter();
  for (const c of chunks) splitter.push(c, (l) => out.push(l));
  splitter.end((l) => out.push(l));
  return out;
}

Deno.test("LineSplitter holds up to LINE_SPLITTER_MAX_CHARS waiting for a newline and passes on more as a line", () => {
  assert.deepEqual(split(["a\r\nb", "c\n\n", "tail"]), ["a", "bc", "", "tail"]);
  const max = "m".repeat(LINE_SPLITTER_MAX_CHARS);
  // Exactly the bound: still one line, ended by its newline.
  assert.deepEqual(split([max, "\nnext\n"]), [max, "next"]);
  // One past it: passed on as it is; the newline then ends an empty line.
  assert.deepEqual(split([`${max}x`, "\nnext\n"]), [`${max}x`, "", "next"]);
});

Deno.test("readLines reads a byte stream into one buffer of readBytes: lines across reads, UTF-8 split between reads, the last line without newline", async () => {
  const bytes = new TextEncoder().encode("first\r\nsec\u00e9ond\nthird");
  // "é" is two bytes (at 10 and 11): the cut at 11 splits it.
  const chunks = [bytes.subarray(0, 4), bytes.subarray(4, 11), bytes.subarray(11)];
  const sizes: number[] = [];
  const lines: string[] = [];
  await readLines(byteStream(chunks, sizes), (l) => lines.push(l), 16);
  assert.deepEqual(lines, ["first", "sec\u00e9ond", "third"]);
  assert.deepEqual(sizes, [16, 16, 16], "every read into the reused 16-byte buffer");
});

Deno.test("readLines reads a stream that is not a byte stream with its default reader", async () => {
  const enc = new TextEncoder();
  const lines: string[] = [];
  await readLines(
    ReadableStream.from([enc.encode("a\nb"), enc.encode("c\n")]),
    (l) => lines.push(l),
  );
  assert.deepEqual(lines, ["a", "bc"]);
});
