/**
 * An ADPP provider whose answers the test programs while it runs, run as a real child process:
 * `deno run --allow-read --allow-write tests/helpers/_programmable_provider.ts INVENTORY_JSON_FILE`.
 * It speaks raw frames through the codec (the provider SDK refuses most of what these tests
 * send: values of the wrong type, NaN, missing timestamps, error statuses on demand) and handles
 * requests concurrently, so a program call gets through while a ReadSignals hangs.
 *
 * The inventory (tests/helpers/programmable_provider.ts `Inventory`) is read from the file at
 * start, so a restarted provider can come back with another one. Every listed device answers:
 * - function 1 `program` (arg `answer`: JSON `Program`): how this device (or `device`) answers
 *   ReadSignals from now on, and how the provider answers GetHealth; results `reads` (the
 *   ReadSignals of the programmed device before this program);
 * - function 2 `stats`: results `reads` (ReadSignals of this device so far), `health` (GetHealth
 *   requests so far) and `last_read` (the signal ids of the last ReadSignals, JSON);
 * - function 3 `exit`: answers, then exits with code 0;
 * - function 4 `garbage`: answers, then writes a frame that is no Response;
 * - the functions the inventory declares for it (`functions`): as its `calls` program them.
 */
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import {
  decodeRequest,
  encodeFrame,
  encodeResponse,
  FrameDecoderStream,
  StatusCode,
  type WireRequest,
  type WireResponse,
  type WireValue,
  WireValueType,
} from "../../src/adpp/mod.ts";
import type { AnswerProgram, Inventory, Program } from "./programmable_provider.ts";
import { DEFAULT_POLL_HINT_HZ, wireSample } from "./_programmable_wire.ts";

const inventory = JSON.parse(Deno.readTextFileSync(Deno.args[0]!)) as Inventory;
if (inventory.pidFile) Deno.writeTextFileSync(inventory.pidFile, `${Deno.pid}\n`, { append: true });
for (const line of inventory.stderr ?? []) console.error(line);
let helloRequest: unknown = null;
let waitReadyRequest: unknown = null;
const list = inventory.list ?? Object.keys(inventory.devices);
const reads = new Map<string, number>();
const lastRead = new Map<string, string[]>();
const readPrograms = new Map<string, AnswerProgram>();
/** Calls of inventory-declared functions so far, by device (which of its `calls` is next). */
const callsMade = new Map<string, number>();
let healthProgram: AnswerProgram = {};
let healthRequests = 0;

/** The request id of an `exit` call: the process exits once its answer is written. */
let exitAfterWriting: number | undefined;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Never settles: the request is never answered (the provider keeps serving others). */
const never = () => new Promise<never>(() => {});

async function applyProgram(
  p: AnswerProgram | undefined,
): Promise<NonNullable<WireResponse["status"]>> {
  if (p?.hang) await never();
  if (p?.delayMs) await sleep(p.delayMs);
  if (p?.error) return { code: p.error.code, message: p.error.message ?? "programmed error" };
  return { code: StatusCode.OK };
}

function str(v: string): WireValue {
  return { type: WireValueType.STRING, string_value: v };
}

async function answer(req: WireRequest): Promise<WireResponse> {
  const id = req.request_id;
  const ok = { code: StatusCode.OK };
  if (req.hello) {
    helloRequest = req.hello;
    const h = inventory.hello ?? {};
    if (h.hang) await never();
    if (h.delayMs) await sleep(h.delayMs);
    return {
      request_id: id,
      status: ok,
      hello: {
        ...(h.protocol !== null ? { protocol_version: h.protocol ?? ADPP_PROTOCOL_VERSION } : {}),
        ...(h.name !== null ? { provider_name: h.name ?? "programmable" } : {}),
        ...(h.version ? { provider_version: h.version } : {}),
        ...(h.metadata ? { metadata: h.metadata } : {}),
      },
    };
  }
  if (req.wait_ready) {
    waitReadyRequest = req.wait_ready;
    const w = inventory.waitReady ?? {};
    if (w.hang) await never();
    if (w.delayMs) await sleep(w.delayMs);
    return {
      request_id: id,
      status: ok,
      wait_ready: w.diagnostics ? { diagnostics: w.diagnostics } : {},
    };
  }
  if (req.list_devices) {
    if (inventory.listDelayMs) await sleep(inventory.listDelayMs);
    return {
      request_id: id,
      status: ok,
      list_devices: { devices: list.map((device_id) => ({ device_id })) },
    };
  }
  if (req.get_health) {
    healthRequests++;
    const status = await applyProgram(healthProgram);
    const answer = healthProgram.devices ? { devices: [...healthProgram.devices] } : {};
    return { request_id: id, status, ...(status?.code === ok.code ? { get_health: answer } : {}) };
  }
  const deviceId = req.describe_device?.device_id ?? req.read_signals?.device_id ??
    req.call?.device_id ?? "";
  const dev = inventory.devices[deviceId];
  if (!dev) {
    return { request_id: id, status: { code: StatusCode.NOT_FOUND, message: deviceId } };
  }
  if (req.describe_device) {
    if (inventory.describedFile) {
      Deno.writeTextFileSync(inventory.describedFile, `${deviceId}\n`, { append: true });
    }
    if (inventory.describeDelayMs) await sleep(inventory.describeDelayMs);
    if (inventory.exitOnDescribe === deviceId) Deno.exit(4);
    return {
      request_id: id,
      status: ok,
      describe_device: {
        ...(dev.noDevice ? {} : {
          device: { device_id: deviceId, type_id: "test.programmable", tags: dev.tags ?? {} },
        }),
        capabilities: {
          signals: dev.signals.map((s) => ({
            signal_id: s.id,
            name: s.id,
            value_type: s.type,
            poll_hint_hz: s.hint ?? DEFAULT_POLL_HINT_HZ,
            ...(s.staleMs === undefined ? {} : { stale_after_ms: s.staleMs }),
            ...(s.unit === undefined ? {} : { unit: s.unit }),
          })),
          functions: [
            { function_id: 1, name: "program", policy: { category: 1 }, args: [] },
            { function_id: 2, name: "stats", policy: { category: 1 }, args: [] },
            ...(dev.functions ?? []),
          ],
        },
      },
    };
  }
  if (req.read_signals) {
    reads.set(deviceId, (reads.get(deviceId) ?? 0) + 1);
    lastRead.set(deviceId, req.read_signals.signal_ids ?? []);
    const program = readPrograms.get(deviceId) ?? { values: dev.values, delayMs: dev.readDelayMs };
    // The reads arriving from now on (while this one hangs, say) are answered as `then` says.
    if (program.then) readPrograms.set(deviceId, program.then);
    const status = await applyProgram(program);
    if (status?.code !== ok.code) return { request_id: id, status };
    const values = (program?.values ?? []).map(wireSample);
    return { request_id: id, status, read_signals: { device_id: deviceId, values } };
  }
  if (req.call?.function_id === 1) {
    const p = JSON.parse(req.call.args?.answer?.string_value ?? "{}") as Program;
    if (p.read) readPrograms.set(p.device ?? deviceId, p.read);
    if (p.health) healthProgram = p.health;
    // The reads of the programmed device so far: those after this are answered as programmed.
    const before = reads.get(p.device ?? deviceId) ?? 0;
    return { request_id: id, status: ok, call: { results: { reads: str(String(before)) } } };
  }
  if (req.call?.function_id === 3) {
    // Exits once this answer is written (an exit before it, on a loaded machine, lost it).
    exitAfterWriting = id;
    return { request_id: id, status: ok, call: {} };
  }
  if (req.call?.function_id === 4) {
    // A frame whose bytes are no Response: the runtime must end the session (and the process).
    setTimeout(() => writer.write(encodeFrame(new Uint8Array([0xff, 0xff, 0xff]))), 50);
    return { request_id: id, status: ok, call: {} };
  }
  if (req.call?.function_id === 2) {
    return {
      request_id: id,
      status: ok,
      call: {
        results: {
          reads: str(String(reads.get(deviceId) ?? 0)),
          health: str(String(healthRequests)),
          last_read: str(JSON.stringify(lastRead.get(deviceId) ?? null)),
          hello: str(JSON.stringify(helloRequest)),
          wait_ready: str(JSON.stringify(waitReadyRequest)),
        },
      },
    };
  }
  const fn = req.call?.function_id;
  if (fn !== undefined && dev.calls?.length && dev.functions?.some((f) => f.function_id === fn)) {
    const n = callsMade.get(deviceId) ?? 0;
    callsMade.set(deviceId, n + 1);
    const p = dev.calls[Math.min(n, dev.calls.length - 1)]!;
    if (p.read) readPrograms.set(p.device ?? deviceId, p.read);
    if (p.health) healthProgram = p.health;
    return { request_id: id, status: ok, call: {} };
  }
  return { request_id: id, status: { code: StatusCode.UNIMPLEMENTED, message: "no such request" } };
}

const writer = Deno.stdout.writable.getWriter();
for await (const frame of Deno.stdin.readable.pipeThrough(new FrameDecoderStream())) {
  answer(decodeRequest(frame)).then((res) =>
    writer.write(encodeFrame(encodeResponse(res))).then(() => {
      if (res.request_id === exitAfterWriting) setTimeout(() => Deno.exit(0), 50);
    })
  );
}
// stdin closed (the ADPP stop signal): a hung request must not keep the process alive.
if (inventory.exitDelayMs) await sleep(inventory.exitDelayMs);
Deno.exit(0);
