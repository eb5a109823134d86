/** Shared pieces of the provider-data scenarios: the scripted provider and its runtime fixture. */
import type { ProviderConfig } from "../../src/config/mod.ts";
import { HttpApi } from "../../src/http/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { fixtureServices, HttpFixture } from "../helpers/runtime_fixture.ts";
import { testConfig } from "../helpers/sim_config.ts";

const DATA_PROVIDER = new URL("./_data_provider.ts", import.meta.url).pathname;

/** A provider entry running tests/scenarios/_data_provider.ts with one scenario. */
export function dataProvider(id: string, scenario: string): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: ["run", "--quiet", DATA_PROVIDER, scenario],
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

/** A runtime over the scripted provider `p0` running `scenario`, with its API and its log lines. */
export async function startDataFixture(
  scenario: string,
  o: { pollingIntervalMs?: number } = {},
): Promise<{ fx: HttpFixture; lines: string[] }> {
  const { log, lines } = capturingLogger({ level: "warn" });
  const config = testConfig({
    providers: [dataProvider("p0", scenario)],
    pollingIntervalMs: o.pollingIntervalMs ?? 50,
  });
  const runtime = await startRuntime(config, { host: { log } });
  const services = fixtureServices(runtime);
  const api = new HttpApi(services, { apiToken: "" });
  return { fx: new HttpFixture(runtime, services, api), lines };
}

/** Raw SSE frames (text, JSON unparsed so exact digits can be checked) from a live stream. */
export class RawSseFrames {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buf = "";

  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
  }

  /**
   * The next frame that carries an event: its `event:` name and raw `data:` text. Throws when
   * none arrives within `timeoutMs` (a stalled stream fails the test instead of hanging it).
   */
  async next(timeoutMs = 10_000): Promise<{ event: string; data: string }> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const end = this.#buf.indexOf("\n\n");
      if (end >= 0) {
        const raw = this.#buf.slice(0, end);
        this.#buf = this.#buf.slice(end + 2);
        const event = /^event: (.*)$/m.exec(raw)?.[1];
        const data = /^data: (.*)$/m.exec(raw)?.[1];
        if (event !== undefined && data !== undefined) return { event, data };
        continue;
      }
      const left = deadline - performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const { done, value } = await Promise.race([
        this.#reader.read(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no event frame within ${timeoutMs} ms`)),
            Math.max(0, left),
          );
        }),
      ]).finally(() => clearTimeout(timer));
      if (done) throw new Error("event stream ended");
      this.#buf += this.#decoder.decode(value, { stream: true });
    }
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}
