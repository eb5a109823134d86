/**
 * The fleet view's tests on a real Mosquitto: the broker, runtimes of group "lab" on it (each with
 * one simulated provider), the test's own MQTT clients (a host, a peer), all ended when the test
 * ends (clients, then runtimes, then the broker); the view of group "lab" for 2000 ms; the CLI
 * (`runtime --fleet ...`) as a child process; a host's Rebirth payload.
 */
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { Mosquitto } from "../helpers/mosquitto.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { collectFleet, DataType, encode, type FleetOptions } from "../../src/sparkplug/mod.ts";
import { connectMqttJs, systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Logger } from "../../src/common/mod.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { HeldSession } from "../helpers/held_session.ts";

/** The group every runtime of the rig publishes in. */
export const FLEET_GROUP = "lab";

/** A host's NCMD `Node Control/Rebirth` payload. */
export const rebirth = (): Buffer =>
  Buffer.from(encode({
    timestamp: Date.now(),
    metrics: [{ name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true }],
  }));

export interface FleetLab {
  readonly broker: Mosquitto;
  /**
   * A runtime whose edge node `name` is of group "lab" on the broker, with provider "sim0";
   * `clientId`: its `sparkplug.client_id` (a copy of one configuration on a second machine).
   */
  runtime(name?: string, o?: { readonly clientId?: string }): Promise<Kernel>;
  /** Stops a runtime of the rig before the test ends (the rig does not stop it again). */
  stop(rt: Kernel): Promise<void>;
  /** An MQTT client of the test on the broker, client id `<prefix>-<uuid>`. */
  client(prefix: string): Promise<mqtt.MqttClient>;
  /** The fleet view of group "lab" for 2000 ms; `o` over these options. */
  collect(o?: Partial<FleetOptions>): ReturnType<typeof collectFleet>;
}

/** Runs `fn` on a new broker; ends its clients, runtimes and the broker whatever it does. */
export async function withFleetLab(fn: (lab: FleetLab) => Promise<void>): Promise<void> {
  const broker = await Mosquitto.start();
  const runtimes: Kernel[] = [];
  const clients: mqtt.MqttClient[] = [];
  const lab: FleetLab = {
    broker,
    async runtime(name = "rig-1", o = {}) {
      const rt = await startRuntime(testConfig({
        runtime: { name },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: broker.url,
          groupId: FLEET_GROUP,
          ...(o.clientId === undefined ? {} : { clientId: o.clientId }),
        },
      }));
      runtimes.push(rt);
      return rt;
    },
    async stop(rt) {
      const i = runtimes.indexOf(rt);
      if (i >= 0) runtimes.splice(i, 1);
      await rt.stop();
    },
    async client(prefix) {
      const c = await mqtt.connectAsync(broker.url, {
        clientId: `${prefix}-${crypto.randomUUID()}`,
      });
      clients.push(c);
      return c;
    },
    collect(o = {}) {
      return collectFleet({
        url: broker.url,
        group: FLEET_GROUP,
        waitMs: 2000,
        connect: connectMqttJs,
        clock: systemClock,
        ...o,
      });
    },
  };
  try {
    await fn(lab);
  } finally {
    for (const c of clients) await c.endAsync(true);
    for (const rt of runtimes) await rt.stop();
    await broker.dispose();
  }
}

/** `runtime <args>` (src/main.ts) as a child process, started: stdout and stderr piped. */
export function spawnRuntimeCli(args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...compiledPermissions(),
      new URL("../../src/main.ts", import.meta.url).pathname,
      ...args,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** `runtime <args>` (src/main.ts) as a child process: its exit code and its output as text. */
export async function runtimeCli(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await spawnRuntimeCli(args).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * The fleet view listening (group "g", `waitMs`: 1 s, on a manual clock; ended early by
 * `interrupt` when given; WARNing to `log` when given) to a session double that is up: `send`
 * hands it one edge node message;
 * `collected` settles once the clock passed the window; `discards`: the sessions it connected
 * after its own (each one discarding its session on the broker).
 */
export async function listeningFleet(
  waitMs = 1000,
  o: { interrupt?: AbortSignal; log?: Logger } = {},
) {
  const session = new HeldSession({ hold: false });
  const discards: HeldSession[] = [];
  let connects = 0;
  const clock = new ManualClock();
  const collected = collectFleet({
    url: "mqtt://test",
    group: "g",
    waitMs,
    // The view's session first; then the one that discards it once the window is over, up at once.
    connect: () => {
      if (connects++ === 0) return Promise.resolve(session);
      const discard = new HeldSession({ hold: false });
      discards.push(discard);
      discard.up();
      return Promise.resolve(discard);
    },
    clock,
    interrupt: o.interrupt,
    log: o.log,
  });
  await flushMicrotasks();
  session.up();
  await flushMicrotasks();
  const send = (topic: string, metrics: Array<Record<string, unknown>> = []) =>
    session.deliver(`spBv1.0/g/${topic}`, encode({ timestamp: 1, metrics }));
  return { clock, collected, send, session, discards };
}
