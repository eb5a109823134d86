/**
 * deno run -A bench/wake_cost.ts [--ticks 300]
 *
 * What one event-loop wake-up costs this process in CPU, with nothing else to do: a timer chain
 * at 10 ms and at 100 ms, and a read woken by a child writing a byte every 10 ms (the way a
 * provider's answer wakes the runtime). CPU = `process.cpuUsage` (every thread) over the ticks,
 * after a 3 s settle. The poll path's figures (bench/README.md, "What a wake-up costs") are read
 * against this: on a machine where a wake-up costs hundreds of µs, the work done per wake-up
 * weighs less than how many wake-ups there are. Not a test.
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Deno.args,
  options: { ticks: { type: "string", default: "300" } },
});
const ticks = Number(values.ticks);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

await sleep(3000);
for (const delayMs of [10, 100]) {
  const n = delayMs === 100 ? Math.max(20, Math.round(ticks / 5)) : ticks;
  const c0 = cpuUs();
  for (let i = 0; i < n; i++) await sleep(delayMs);
  console.log(`timer every ${delayMs} ms: ${((cpuUs() - c0) / n).toFixed(0)} µs CPU per wake-up`);
}

// A child writing one byte every 10 ms; each read is woken by its write.
const child = new Deno.Command(Deno.execPath(), {
  args: [
    "eval",
    `for (let i = 0; i < ${ticks + 50}; i++) { await new Promise((r) => setTimeout(r, 10)); ` +
    `Deno.stdout.writeSync(new Uint8Array([120])); }`,
  ],
  stdout: "piped",
}).spawn();
const reader = child.stdout.getReader({ mode: "byob" });
let buffer = new ArrayBuffer(65_536);
let reads = 0;
let c0 = 0;
for (;;) {
  const r = await reader.read(new Uint8Array(buffer));
  if (r.done) break;
  buffer = r.value.buffer as ArrayBuffer;
  if (++reads === 50) c0 = cpuUs();
}
await child.status;
console.log(
  `read woken by a child's write: ${((cpuUs() - c0) / (reads - 50)).toFixed(0)} µs CPU per wake-up`,
);
