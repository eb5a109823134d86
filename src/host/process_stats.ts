import type { ProcessStats } from "../common/mod.ts";

/**
 * USER_HZ, the unit of /proc/<pid>/stat's utime and stime: 100 on every Linux architecture
 * the runtime ships for (x86_64, aarch64); Deno cannot call sysconf(_SC_CLK_TCK).
 */
export const PROC_CLOCK_TICKS_PER_SECOND = 100;

/**
 * User + system CPU seconds from /proc/<pid>/stat text (fields 14 and 15, counted after the
 * parenthesised command name, which may itself hold spaces and parentheses); null when the text
 * does not have them.
 */
export function cpuSecondsFromProcStat(text: string): number | null {
  const end = text.lastIndexOf(")");
  if (end < 0) return null;
  const fields = text.slice(end + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime) || fields[12] === undefined) return null;
  return (utime + stime) / PROC_CLOCK_TICKS_PER_SECOND;
}

/** What node:process offers for CPU time (getrusage): no permission needed. */
interface CpuUsage {
  cpuUsage(): { user: number; system: number };
}

/**
 * Where this process's CPU time comes from, decided at the first read: /proc/self/stat where Deno
 * lets the process read it (only under --allow-all), else node:process's cpuUsage -- imported then,
 * not at start-up: node:process (with node:util, which main.ts no longer loads) brings up Deno's Node
 * layer, ~3 MiB of RSS every runtime paid although only a GET /metrics reads the figure
 * (bench/README.md, "The Node layer out of the start-up"). Null: neither works (not Linux, no procfs).
 */
let cpuSource: Promise<(() => number) | null> | undefined;

function procStatSeconds(): number | null {
  return cpuSecondsFromProcStat(Deno.readTextFileSync("/proc/self/stat"));
}

async function chooseCpuSource(): Promise<(() => number) | null> {
  try {
    if (procStatSeconds() !== null) {
      return () => {
        try {
          return procStatSeconds() ?? Number.NaN;
        } catch {
          return Number.NaN;
        }
      };
    }
  } catch {
    // Deno refuses /proc/self without --allow-all (the compiled binary's case): node:process
  }
  try {
    const process: CpuUsage = (await import("node:process")).default;
    process.cpuUsage();
    return () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1e6;
    };
  } catch {
    return null;
  }
}

/**
 * This process's RSS and V8 heap (Deno.memoryUsage) and CPU time (see cpuSource; the first call
 * chooses it).
 */
export async function readProcessStats(): Promise<ProcessStats> {
  cpuSource ??= chooseCpuSource();
  const cpu = await cpuSource;
  let cpuSeconds: number | null = null;
  if (cpu !== null) {
    const seconds = cpu();
    if (Number.isFinite(seconds)) cpuSeconds = seconds;
  }
  const mem = Deno.memoryUsage();
  return {
    rssBytes: mem.rss,
    cpuSeconds,
    heapUsedBytes: mem.heapUsed,
    heapTotalBytes: mem.heapTotal,
  };
}
