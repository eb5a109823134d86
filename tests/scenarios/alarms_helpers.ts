/**
 * Shared pieces of the alarm scenario tests: alarms and interlocks read by the real loader, a
 * recorded event stream over a real socket, JSON over real HTTP, and programming the
 * programmable provider through the runtime's own registry.
 */
import assert from "node:assert/strict";
import { parseSseFrame, SseClient } from "../../bench/lib/sse.ts";
import { type AlarmConfig, type InterlockConfig, loadConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { T } from "../helpers/programmable_provider.ts";
import type { Program } from "../helpers/programmable_provider.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

/** `alarms:` / `interlocks:` YAML through the real loader, for the given provider ids. */
export function alarmsConfig(
  yaml: string,
  providerIds: readonly string[] = ["sim0"],
): { alarms: AlarmConfig[]; interlocks: InterlockConfig[] } {
  const providers = providerIds.map((id) => `{id: ${id}, command: prov}`).join(", ");
  const r = loadConfig(`providers: [${providers}]\n${yaml}`, {
    path: "/etc/rig/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => false,
    commandExists: () => true,
    cwd: "/",
  });
  assert.deepEqual(r.diagnostics.filter((d) => d.severity === "error"), []);
  return { alarms: [...r.config!.alarms], interlocks: [...r.config!.interlocks] };
}

/**
 * One interlock, hot_lockout, blocking sim0/motorctl0 set_motor_duty while sim0/tempctl0/tc1_temp
 * is above 1000: it never blocks on what a sim reads (room temperature), so a judged call passes.
 */
export function neverBlockingInterlock(): InterlockConfig[] {
  return alarmsConfig(
    "interlocks:\n" +
      "  - id: hot_lockout\n" +
      "    block: [sim0/motorctl0/set_motor_duty]\n" +
      "    while: sim0/tempctl0/tc1_temp > 1000\n" +
      "    message: Motor locked while the heater is hot\n",
  ).interlocks;
}

/** One SSE frame as received: its event name and parsed data. */
export interface ReceivedEvent {
  readonly event: string;
  // deno-lint-ignore no-explicit-any
  readonly data: any;
}

/** GET /v0/events over a real socket, every frame kept in order until `close()`. */
export class EventStream {
  readonly frames: ReceivedEvent[] = [];
  #client: SseClient | null = null;

  static async open(base: string): Promise<EventStream> {
    const s = new EventStream();
    s.#client = await SseClient.open(`${base}/v0/events`, (frame) => {
      const f = parseSseFrame(frame);
      if (f) s.frames.push({ event: f.event, data: JSON.parse(f.data) });
    });
    return s;
  }

  /** Frames of one event name. */
  of(event: string): ReceivedEvent[] {
    return this.frames.filter((f) => f.event === event);
  }

  async close(): Promise<void> {
    await this.#client?.close();
  }
}

/** JSON over real HTTP. */
export class Api {
  constructor(readonly base: string) {}

  // deno-lint-ignore no-explicit-any
  async get(path: string): Promise<{ status: number; json: any }> {
    const r = await apiFetch(`${this.base}${path}`);
    return { status: r.status, json: await r.json() };
  }

  // deno-lint-ignore no-explicit-any
  async post(path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const r = await apiFetch(`${this.base}${path}`, {
      method: "POST",
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? null : typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  }
}

/** A POST /v0/call body. */
export function callBody(
  handle: string,
  functionId: number,
  args: Record<string, unknown>,
): Record<string, unknown> {
  const [provider_id, device_id] = handle.split("/");
  return { provider_id, device_id, function_id: functionId, args };
}

/** Programs the programmable provider's device (function 1) through the runtime's registry. */
export async function program(
  rt: Kernel,
  providerId: string,
  device: string,
  p: Program,
): Promise<void> {
  await rt.registry.host(providerId)!.request("call", {
    device_id: device,
    function_id: 1,
    args: { answer: { type: T.STRING, string_value: JSON.stringify(p) } },
  });
}
