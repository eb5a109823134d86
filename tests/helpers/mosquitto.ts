/**
 * Test helper: a real Eclipse Mosquitto broker (Debian package `mosquitto`) on 127.0.0.1 and a
 * free port (Mosquitto cannot bind port 0 and say which: startOnFreePort picks one and retries
 * when a stranger took it, or took its TLS listener's), anonymous, without persistence. Skips loudly when it is not installed.
 *
 * Also `mosquitto_sub` (package `mosquitto-clients`), a subscriber no one here wrote: tests read
 * Sparkplug payloads through it as raw bytes.
 */
import { freePort, startOnFreePort, waitForListeningPort, type WatchedChild } from "./ports.ts";

export const MOSQUITTO_BIN = "/usr/sbin/mosquitto";
export const MOSQUITTO_SUB_BIN = "/usr/bin/mosquitto_sub";
/** coreutils' stdbuf: mosquitto_sub's output line by line through a pipe. */
const STDBUF_BIN = "/usr/bin/stdbuf";

let warned = false;

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** True when the broker is missing; prints a loud message once so a skip is never silent. */
export function mosquittoMissing(): boolean {
  const missing = !isFile(MOSQUITTO_BIN) || !isFile(MOSQUITTO_SUB_BIN) || !isFile(STDBUF_BIN);
  if (missing && !warned) {
    warned = true;
    console.error(
      `\n!!!!!!!! ${MOSQUITTO_BIN} or ${MOSQUITTO_SUB_BIN} not found: Sparkplug broker tests ` +
        `are SKIPPED. Install them with: apt-get install -y mosquitto mosquitto-clients !!!!!!!!\n`,
    );
  }
  return missing;
}

/** A running (or paused, resumable on the same port) Mosquitto. */
export class Mosquitto {
  readonly #dir: string;
  /** `max_queued_messages` (Mosquitto's default, 1000, when null). */
  #maxQueued: number | null = null;
  /** `max_packet_size` (none, Mosquitto's default, when null). */
  #maxPacket: number | null = null;
  /** Whether the broker logs every event to `mosquitto.log` in its folder (else nothing). */
  #log = false;
  #port = 0;
  #tlsPort = 0;
  #child: Deno.ChildProcess | null = null;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  get port(): number {
    return this.#port;
  }

  /** The TLS listener's port (0 without one). */
  get tlsPort(): number {
    return this.#tlsPort;
  }

  /** `mqtt://127.0.0.1:PORT`. */
  get url(): string {
    return `mqtt://127.0.0.1:${this.#port}`;
  }

  /**
   * Starts a broker on a free port; with `tls`, a second listener (mqtts://, port `tlsPort`) with
   * that server certificate and key (readable by the broker's own user).
   */
  static async start(
    o: {
      tls?: { certFile: string; keyFile: string };
      /**
       * Mosquitto's `max_queued_messages`: QoS 1 messages it queues for a subscriber beyond its
       * 20 in flight (default 1000; 0 is no bound), beyond which it drops them.
       */
      maxQueuedMessages?: number;
      /**
       * Mosquitto's `max_packet_size`: a client that sends a larger packet (a PUBLISH whose topic
       * and payload exceed it) is disconnected (default: no bound).
       */
      maxPacketSize?: number;
      /**
       * Log every event (connections with their client ids, subscriptions) to a file the test
       * reads with log(): how a test learns the client id a child process chose.
       */
      log?: boolean;
    } = {},
  ): Promise<Mosquitto> {
    const dir = await Deno.makeTempDir({ prefix: "mosquitto_test_" });
    // Started as root, Mosquitto drops to its own user (`mosquitto`): without this it cannot write
    // its persistence file there, and retained messages and sessions are lost across a pause.
    await Deno.chmod(dir, 0o777);
    const m = new Mosquitto(dir);
    m.#maxQueued = o.maxQueuedMessages ?? null;
    m.#maxPacket = o.maxPacketSize ?? null;
    m.#log = o.log ?? false;
    if (o.tls) {
      // Copies the broker's user can read (the originals may sit in a private test directory).
      for (const [from, to] of [[o.tls.certFile, "cert.pem"], [o.tls.keyFile, "key.pem"]]) {
        await Deno.copyFile(from!, `${dir}/${to}`);
        await Deno.chmod(`${dir}/${to}`, 0o644);
      }
    }
    try {
      const { port, started } = await startOnFreePort(
        (port) => {
          // Picked again at each attempt: a stranger on it, too, ends the broker and is retried.
          if (o.tls) m.#tlsPort = freePort();
          return m.#spawn(port);
        },
        (child) => m.#watch(child),
        async (child) => {
          try {
            child.kill("SIGKILL");
          } catch { /* ended */ }
          await child.status;
        },
        { timeoutMs: 15000 },
      );
      m.#port = port;
      m.#child = started;
    } catch (err) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw err;
    }
    return m;
  }

  /** The broker's process for waitForListeningPort: listening once on its TLS port too. */
  #watch(child: Deno.ChildProcess): WatchedChild {
    return {
      pid: child.pid,
      ended: child.status,
      alsoPorts: this.#tlsPort === 0 ? [] : [this.#tlsPort],
    };
  }

  #spawn(port: number): Deno.ChildProcess {
    const conf = `${this.#dir}/mosquitto.conf`;
    Deno.writeTextFileSync(
      conf,
      // Persistence (saved on a graceful stop): a subscriber's session with clean=false outlives
      // a pause, and what is published meanwhile (QoS 0 included) waits for it.
      `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence true\n` +
        `persistence_location ${this.#dir}/\nqueue_qos0_messages true\n` +
        (this.#log
          ? `log_dest file ${this.#dir}/mosquitto.log\nlog_type all\n`
          : "log_dest none\n") +
        (this.#maxQueued === null ? "" : `max_queued_messages ${this.#maxQueued}\n`) +
        (this.#maxPacket === null ? "" : `max_packet_size ${this.#maxPacket}\n`) +
        (this.#tlsPort === 0 ? "" : `listener ${this.#tlsPort} 127.0.0.1\n` +
          `certfile ${this.#dir}/cert.pem\nkeyfile ${this.#dir}/key.pem\n`),
    );
    return new Deno.Command(MOSQUITTO_BIN, {
      args: ["-c", conf],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  }

  /**
   * Stops the broker (clients see the connection drop); resume() starts it again. SIGTERM saves
   * the persistent sessions first (default); `kill: true` is SIGKILL and saves nothing.
   */
  async pause(o: { kill?: boolean } = {}): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = null;
    try {
      child.kill(o.kill ? "SIGKILL" : "SIGTERM");
    } catch { /* ended */ }
    await child.status;
  }

  /** Starts the broker again on the same port. */
  async resume(): Promise<void> {
    if (this.#child) return;
    const child = this.#spawn(this.#port);
    this.#child = child;
    try {
      await waitForListeningPort(this.#watch(child), {
        port: this.#port,
        timeoutMs: 15000,
      });
    } catch (err) {
      await this.pause();
      throw new Error(`mosquitto could not bind port ${this.#port} again: ${err}`);
    }
  }

  /** What the broker logged so far (started with `log: true`; else empty). */
  async log(): Promise<string> {
    return await Deno.readTextFile(`${this.#dir}/mosquitto.log`).catch(() => "");
  }

  /** Sends a signal to the broker (SIGSTOP: it hangs, connections stay open; SIGCONT: resumes). */
  signal(sig: Deno.Signal): void {
    this.#child?.kill(sig);
  }

  async dispose(): Promise<void> {
    this.signal("SIGCONT"); // a stopped process is killed all the same; SIGCONT keeps it simple
    await this.pause({ kill: true });
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }

  /**
   * Runs `mosquitto_sub` on `topic` until it has `count` messages (or `timeoutS` seconds pass),
   * returning each as topic and raw payload bytes. Resolves once the subscriber is subscribed,
   * with a promise of the messages (an object: an async function would flatten the promise).
   */
  async subscribeRaw(
    topic: string,
    count: number,
    timeoutS = 20,
  ): Promise<{ messages: Promise<Array<{ topic: string; payload: Uint8Array }>> }> {
    // Line-buffered (stdbuf): piped stdio is block-buffered, and the SUBACK line must come now.
    const child = new Deno.Command(STDBUF_BIN, {
      args: [
        "-oL",
        MOSQUITTO_SUB_BIN,
        "-h",
        "127.0.0.1",
        "-p",
        String(this.#port),
        "-t",
        topic,
        "-C",
        String(count),
        "-W",
        String(timeoutS),
        "-F",
        "%t %x",
        "-d",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    // -d prints the SUBACK before any message: wait for it.
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("SUBACK")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const messages = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      await child.status;
      const out: Array<{ topic: string; payload: Uint8Array }> = [];
      for (const line of text.split("\n")) {
        const m = /^(spBv1\.0\/\S+) ([0-9a-f]*)$/.exec(line.trim());
        if (!m) continue;
        const hex = m[2]!;
        const payload = new Uint8Array(hex.length / 2);
        for (let i = 0; i < payload.length; i++) {
          payload[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
        }
        out.push({ topic: m[1]!, payload });
      }
      return out;
    })();
    return { messages };
  }
}
