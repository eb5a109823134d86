/**
 * deno run -A bench/console_paint.ts [--loads 7] [--out F]
 *
 * The console's constraint "first paint <= 1 s on this machine", measured here rather than asserted
 * in a test (a timed assertion fails when the parallel suite loads the machine: 1224 ms once, where
 * the same page paints in 100-300 ms alone). The runtime's bundle (built first, as
 * `deno task start` runs it) serves examples/demo.yaml; headless Chromium (Debian's `chromium`,
 * driven by playwright-core, as the console's tests do) opens the operator console `--loads` times,
 * each in a fresh browser context (no cache), and reads the page's first-contentful-paint entry.
 * Prints the median and range; `--out` writes JSON. Not a test; needs `chromium` on PATH.
 */
import { parseArgs } from "node:util";
import { defaultCommands } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { median } from "./lib/stats.ts";
import { chromiumMissing, launchChromium } from "../tests/helpers/browser.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** The console's first paint must come within this, on this machine. */
const FIRST_PAINT_LIMIT_MS = 1000;
/** A paint entry that has not come after this is reported as a failure of the load. */
const PAINT_WAIT_MS = 10_000;
/** How long the demo may take to report its provider AVAILABLE. */
const READY_TIMEOUT_MS = 60_000;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { loads: { type: "string", default: "7" }, out: { type: "string" } },
  });
  const loads = Number(values.loads);
  if (chromiumMissing()) Deno.exit(1);
  await buildAll();
  const port = freePort();
  const rt = await RuntimeProcess.start({
    cmd: [...defaultCommands(REPO).runtime, "--port", String(port)],
    configPath: `${REPO}/examples/demo.yaml`,
    port,
    expectedProviders: 1,
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  const browser = await launchChromium();
  const paints: number[] = [];
  try {
    for (let i = 0; i < loads; i++) {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`http://127.0.0.1:${port}/`);
        const paint = await page.evaluate((waitMs) =>
          new Promise<number>((resolve) => {
            setTimeout(() => resolve(-1), waitMs);
            new PerformanceObserver((list) => {
              const entry = list.getEntriesByName("first-contentful-paint")[0];
              if (entry) resolve(entry.startTime);
            }).observe({ type: "paint", buffered: true });
          }), PAINT_WAIT_MS);
        if (paint < 0) throw new Error(`load ${i + 1}: no first-contentful-paint entry`);
        paints.push(Math.round(paint));
      } finally {
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await rt.stop();
  }
  const result = {
    date: new Date().toISOString(),
    loads,
    first_contentful_paint_ms: paints,
    median_ms: median(paints),
    max_ms: Math.max(...paints),
    limit_ms: FIRST_PAINT_LIMIT_MS,
    load_average: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3),
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  if (result.max_ms > FIRST_PAINT_LIMIT_MS) {
    console.error(`console-paint: a load painted after ${FIRST_PAINT_LIMIT_MS} ms`);
    Deno.exit(1);
  }
}
