import process from "node:process";
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

/**
 * This process's RSS and V8 heap (Deno.memoryUsage) and CPU time (process.cpuUsage, getrusage: no
 * permission needed; /proc/self/stat, which Deno refuses a process without --allow-all -- the
 * compiled binary's case, whose metrics therefore lacked the figure -- only where it throws).
 */
export function readProcessStats(): ProcessStats {
  let cpuSeconds: number | null = null;
  try {
    const usage = process.cpuUsage();
    cpuSeconds = (usage.user + usage.system) / 1e6;
  } catch {
    try {
      cpuSeconds = cpuSecondsFromProcStat(Deno.readTextFileSync("/proc/self/stat"));
    } catch {
      // no procfs (not Linux, or a sandbox without it): the metric is left out
    }
  }
  const mem = Deno.memoryUsage();
  return {
    rssBytes: mem.rss,
    cpuSeconds,
    heapUsedBytes: mem.heapUsed,
    heapTotalBytes: mem.heapTotal,
  };
}
