/**
 * GET /metrics scrape time with 10 simulated providers (real child processes, polling at 10 Hz
 * meanwhile): the request handler end to end (auth, route, render, Response), body read
 * included, no socket. Before measuring, every series a busy runtime has is filled: calls with
 * two outcome codes per provider and requests on every route template the test touches.
 * Run: `deno run --allow-all bench/metrics_scrape.ts [scrapes]`; prints min / median / p99 / max
 * in ms and the exposition's size; then the rendering alone (synchronous: no other task of the
 * event loop, such as the 10 poll loops, can run inside it), with the same series.
 * The requirement: well under 5 ms (a scrape must not disturb the poll loops).
 */
import { HttpRequestMetrics, renderMetrics, SseHub } from "../src/http/mod.ts";
import { readProcessStats } from "../src/host/mod.ts";
import { startHttpFixture } from "../tests/helpers/runtime_fixture.ts";

const PROVIDERS = 10;
const SCRAPES = Number(Deno.args[0] ?? 500);

const fx = await startHttpFixture({ providers: PROVIDERS });
try {
  await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
  for (let p = 0; p < PROVIDERS; p++) {
    const call = (duty: unknown) =>
      fx.request("POST", "/v0/call", {
        body: {
          provider_id: `sim${p}`,
          device_id: "motorctl0",
          function_id: 10,
          args: {
            motor_index: { type: "int64", int64: 1 },
            duty: { type: "double", double: duty },
          },
        },
      });
    await call(0.1); // OK
    await call(5); // INVALID_ARGUMENT (out of range)
    await fx.request("GET", `/v0/state/sim${p}/motorctl0`);
    await fx.request("GET", `/v0/devices/sim${p}/motorctl0/capabilities`);
  }
  await fx.request("GET", "/v0/runtime/status");
  await fx.request("GET", "/v0/providers/health");
  await fx.request("GET", "/nope/x");
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < SCRAPES + 50; i++) {
    const t0 = performance.now();
    const r = await fx.request("GET", "/metrics");
    const t = performance.now() - t0;
    if (r.status !== 200) throw new Error(`scrape answered ${r.status}`);
    bytes = r.text.length;
    if (i >= 50) times.push(t); // the first 50 warm the code up
  }
  report(`GET /metrics, ${PROVIDERS} providers, ${SCRAPES} scrapes`, times, bytes);
  // The same series in a render of its own: HTTP series copied from what the scrapes recorded.
  const requests = new HttpRequestMetrics();
  for (const route of ["/v0/call", "/v0/state/:provider_id/:device_id", "/v0/mode", "/metrics"]) {
    for (const code of [200, 400, 404]) requests.record("GET", route, code, 0.001);
  }
  const sse = new SseHub({
    bus: fx.services.bus,
    log: fx.services.host.log,
    clock: fx.services.host.clock,
  });
  const renders: number[] = [];
  let cpu0 = 0;
  for (let i = 0; i < SCRAPES + 50; i++) {
    if (i === 50) cpu0 = (await readProcessStats()).cpuSeconds ?? 0;
    const t0 = performance.now();
    const proc = await fx.services.processStats();
    bytes = renderMetrics(fx.services, { requests, sse, inFlight: 0, proc }).length;
    if (i >= 50) renders.push(performance.now() - t0);
  }
  const cpuMs = (((await readProcessStats()).cpuSeconds ?? 0) - cpu0) * 1000 / SCRAPES;
  report(`renderMetrics alone, ${PROVIDERS} providers, ${SCRAPES} renders`, renders, bytes);
  // Process CPU (every thread, 10 ms ticks) over the renders, per render: a figure the machine's
  // other load cannot inflate the way it inflates wall-clock tails.
  console.log(`  process CPU per render: ${cpuMs.toFixed(3)} ms`);
} finally {
  await fx.close();
}

function report(what: string, times: number[], bytes: number): void {
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  console.log(
    `${what}: min ${at(0)!.toFixed(3)} ms, median ${at(0.5)!.toFixed(3)} ms, p99 ${
      at(0.99)!.toFixed(3)
    } ms, max ${times[times.length - 1]!.toFixed(3)} ms; ${bytes} bytes`,
  );
}
