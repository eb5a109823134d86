/**
 * deno run -A bench/poll_cpu.ts [--providers 4] [--secs 20] [--rounds 3] [--fast-ms 10]
 *
 * The runtime's own CPU per device poll, resolved finer than the idle runs can: the kernel runs
 * in this process (src/, the on-board history recording at its defaults, HTTP off) and polls
 * `--providers` simulated providers (child processes, 4 devices each, every device due every cycle whatever its hints).
 * Its CPU time (`process.cpuUsage`: every thread of this process) is read over `--secs` at
 * 100 ms polling and over `--secs` at `--fast-ms` (StateCache.setIntervalMs, below the loader's
 * 100 ms minimum: for measuring only), and CPU per device poll = ΔCPU / Δpolls between the two
 * windows: the method (100 ms against 1000 ms) with ten times the poll rate between the
 * windows, so the idle cost's noise weighs a tenth. Polls are counted by a device-poll listener.
 * Prints one line per round and the median. Not a test; compare runs made one after the other
 * on a quiet machine (or side by side with a copy of this script in the parent's worktree).
 */
import { parseArgs } from "node:util";
import { startServing } from "../tests/helpers/kernel.ts";
import { simProvider, testConfig } from "../tests/helpers/sim_config.ts";
import { simProviderYaml } from "./lib/config_gen.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    providers: { type: "string", default: "4" },
    secs: { type: "string", default: "20" },
    rounds: { type: "string", default: "3" },
    "fast-ms": { type: "string", default: "10" },
  },
});
const providers = Number(values.providers);
const secs = Number(values.secs);
const fastMs = Number(values["fast-ms"]);
const dataDir = await Deno.makeTempDir({ prefix: "poll-cpu-" });
const simYaml = `${dataDir}/sim.yaml`;
await Deno.writeTextFile(simYaml, simProviderYaml()); // the bench's sim: no poll hints
const kernel = await startServing(testConfig({
  providers: Array.from({ length: providers }, (_, i) => simProvider(`sim${i}`, { yaml: simYaml })),
  runtime: { name: "poll-cpu", dataDir },
  http: { enabled: false },
  pollingIntervalMs: 100,
  // A stale bound below the interval: every device is due every cycle, whatever its poll hint.
  health: { staleness: { warnAfterMs: 0, staleAfterMs: 2 } },
}));
let polls = 0;
kernel.cache.onDevicePolled(() => polls++);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
async function window(intervalMs: number): Promise<{ cpuUs: number; polls: number }> {
  kernel.cache.setIntervalMs(intervalMs);
  await sleep(3000); // settle at the new rate
  const c0 = cpuUs();
  const p0 = polls;
  await sleep(secs * 1000);
  return { cpuUs: cpuUs() - c0, polls: polls - p0 };
}
const perPoll: number[] = [];
try {
  await sleep(5000);
  for (let r = 1; r <= Number(values.rounds); r++) {
    const slow = await window(100);
    const fast = await window(fastMs);
    const us = (fast.cpuUs - slow.cpuUs) / (fast.polls - slow.polls);
    perPoll.push(us);
    console.log(
      `round ${r}: 100 ms ${(slow.polls / secs).toFixed(0)} polls/s ${
        (slow.cpuUs / secs / 1e4).toFixed(2)
      } % CPU; ${fastMs} ms ${(fast.polls / secs).toFixed(0)} polls/s ${
        (fast.cpuUs / secs / 1e4).toFixed(2)
      } % CPU; ${us.toFixed(1)} µs per device poll`,
    );
  }
  perPoll.sort((a, b) => a - b);
  console.log(`median ${perPoll[Math.floor(perPoll.length / 2)]!.toFixed(1)} µs per device poll`);
} finally {
  await kernel.stop();
  await Deno.remove(dataDir, { recursive: true });
}
