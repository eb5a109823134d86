/**
 * deno run -A bench/console_idle.ts [--secs 20] [--poll-ms 100] [--out F]
 *
 * What an open operator console costs the machine that shows it while nothing happens but the
 * stream: the runtime's bundle serves examples/demo.yaml with its polling interval set to
 * `--poll-ms` (the simulated provider's values change at every poll, so the page gets a stream of
 * state_update events), headless Chromium (as the console's tests drive it) opens the console
 * once, and for `--secs` after a 5 s settle the bench reads:
 * - the CPU of every Chromium process (browser, renderer, GPU, utility: /proc, utime + stime) as
 *   % of one core;
 * - the renderer main thread's time by kind (Chrome DevTools Protocol Performance.getMetrics:
 *   TaskDuration, ScriptDuration, RecalcStyleDuration, LayoutDuration), as % of one core, and
 *   layouts and style recalculations a second;
 * - the events of the stream the page reads, a second (counted on a connection of the bench's).
 * Prints JSON; `--out` writes it. Not a test; needs `chromium` on PATH.
 */
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { defaultCommands } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { clockTicksPerSecond, descendants, readProcStat } from "./lib/proc.ts";
import { chromiumMissing, launchChromium } from "../tests/helpers/browser.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** How long the demo may take to report its provider AVAILABLE. */
const READY_TIMEOUT_MS = 60_000;
/** Time after the page loads before measuring (first reads, chart set-up). */
const SETTLE_MS = 5000;

/**
 * Counts the events of GET /v0/events (the stream the page reads) on a connection of the bench's
 * own, from now until `stop()`: the page's rate (it reads the stream with fetch, not EventSource).
 */
function countEvents(base: string): { stop(): Promise<number> } {
  let count = 0;
  const abort = new AbortController();
  const reading = (async () => {
    const res = await fetch(`${base}/v0/events`, { signal: abort.signal });
    const decoder = new TextDecoder();
    let carry = "";
    for await (const chunk of res.body!) {
      const lines = (carry + decoder.decode(chunk, { stream: true })).split("\n");
      carry = lines.pop()!;
      for (const line of lines) if (line.startsWith("event: ")) count++;
    }
  })().catch(() => {});
  return {
    async stop() {
      abort.abort();
      await reading;
      return count;
    },
  };
}

/** CPU ticks of every process under `root` (utime + stime). */
function ticksUnder(root: number): number {
  let sum = 0;
  for (const pid of descendants(root)) {
    const st = readProcStat(pid);
    if (st) sum += st.utimeTicks + st.stimeTicks;
  }
  return sum;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      secs: { type: "string", default: "20" },
      "poll-ms": { type: "string", default: "100" },
      out: { type: "string" },
    },
  });
  const secs = Number(values.secs);
  const pollMs = Number(values["poll-ms"]);
  if (chromiumMissing()) Deno.exit(1);
  await buildAll();
  const config = parse(await Deno.readTextFile(`${REPO}/examples/demo.yaml`));
  config.polling = { ...config.polling, interval_ms: pollMs };
  // Beside the demo: its relative paths (its provider, its tree) are taken from its folder.
  const configPath = `${REPO}/examples/.console-idle-${Deno.pid}.yaml`;
  await Deno.writeTextFile(configPath, stringify(config));
  const port = freePort();
  const hz = await clockTicksPerSecond();
  let rt: RuntimeProcess | null = null;
  const browser = await launchChromium();
  try {
    rt = await RuntimeProcess.start({
      cmd: [...defaultCommands(REPO).runtime, "--port", String(port)],
      configPath,
      port,
      expectedProviders: 1,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable");
    const metrics = async () =>
      Object.fromEntries(
        (await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]),
      ) as Record<string, number>;
    const m0 = await metrics();
    const events = countEvents(`http://127.0.0.1:${port}`);
    const t0 = ticksUnder(Deno.pid);
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, secs * 1000));
    const t1 = ticksUnder(Deno.pid);
    const w1 = performance.now();
    const m1 = await metrics();
    const counted = await events.stop();
    const wall = (w1 - w0) / 1000;
    const share = (k: string) => Math.round(((m1[k]! - m0[k]!) / wall) * 1000) / 10;
    const rate = (k: string) => Math.round(((m1[k]! - m0[k]!) / wall) * 10) / 10;
    const result = {
      date: new Date().toISOString(),
      poll_ms: pollMs,
      secs: Math.round(wall * 10) / 10,
      events_per_s: Math.round((counted / wall) * 10) / 10,
      chromium_cpu_percent: Math.round(((t1 - t0) / hz / wall) * 1000) / 10,
      renderer_main_thread_percent: {
        task: share("TaskDuration"),
        script: share("ScriptDuration"),
        recalc_style: share("RecalcStyleDuration"),
        layout: share("LayoutDuration"),
      },
      layouts_per_s: rate("LayoutCount"),
      style_recalcs_per_s: rate("RecalcStyleCount"),
      load_average: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3),
    };
    console.log(JSON.stringify(result, null, 2));
    if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
    await context.close();
  } finally {
    await browser.close();
    await rt?.stop();
    await Deno.remove(configPath).catch(() => {});
  }
}
