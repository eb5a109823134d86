/**
 * deno run -A bench/pipe_floor.ts [--trips 20000] [--batch 1] [--bytes 120] [--out F]
 *
 * The floor under the poll path (issue 39): what one round trip through a pipe to a native child
 * costs this Deno, with nothing of ours but the framing. The child is `cat` (C, echoes stdin to
 * stdout); the runtime's own path is used on our side: the ADPP client's frames
 * (src/adpp/framing.ts `encodeFrame`, `FrameReader` over the child's stdout) and a
 * WritableStreamDefaultWriter on its stdin. A trip writes `--batch` frames of `--bytes` in one
 * write and reads them back. Prints the trip's wall time (p50, p90) and this process's CPU (user
 * and system, /proc/self/stat) per frame. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { encodeFrame, FrameReader } from "../src/adpp/framing.ts";
import { clockTicksPerSecond, readProcStat } from "./lib/proc.ts";
import { percentile } from "./lib/stats.ts";

/** Trips run before measuring (JIT warm-up). */
const WARM_TRIPS = 2000;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      trips: { type: "string", default: "20000" },
      batch: { type: "string", default: "1" },
      bytes: { type: "string", default: "120" },
      out: { type: "string" },
    },
  });
  const trips = Number(values.trips);
  const batch = Number(values.batch);
  const bytes = Number(values.bytes);
  if (![trips, batch, bytes].every((n) => Number.isInteger(n) && n > 0)) {
    throw new RangeError("--trips, --batch and --bytes must be positive integers");
  }
  const child = new Deno.Command("cat", { stdin: "piped", stdout: "piped", stderr: "null" })
    .spawn();
  const writer = child.stdin.getWriter();
  const reader = new FrameReader(child.stdout);
  const frame = encodeFrame(new Uint8Array(bytes).fill(7));
  const out = new Uint8Array(frame.length * batch);
  for (let i = 0; i < batch; i++) out.set(frame, i * frame.length);
  const trip = async () => {
    await writer.write(out);
    for (let i = 0; i < batch; i++) {
      const r = await reader.read();
      if (r.done || r.value.length !== bytes) throw new Error("cat did not echo the frame");
    }
  };
  for (let i = 0; i < WARM_TRIPS; i++) await trip();
  const ticks = await clockTicksPerSecond();
  const before = readProcStat(Deno.pid)!;
  const walls: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < trips; i++) {
    const t = performance.now();
    await trip();
    walls.push((performance.now() - t) * 1000);
  }
  const elapsedS = (performance.now() - t0) / 1000;
  const after = readProcStat(Deno.pid)!;
  const frames = trips * batch;
  const userUs = ((after.utimeTicks - before.utimeTicks) / ticks) * 1e6 / frames;
  const sysUs = ((after.stimeTicks - before.stimeTicks) / ticks) * 1e6 / frames;
  walls.sort((a, b) => a - b);
  const result = {
    trips,
    batch,
    bytes,
    wall_us_per_trip: { p50: percentile(walls, 50), p90: percentile(walls, 90) },
    cpu_us_per_frame: { user: userUs, system: sysUs, total: userUs + sysUs },
    frames_per_s: frames / elapsedS,
    load_average: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).map(Number),
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  await writer.close();
  await child.status;
}
