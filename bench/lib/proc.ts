/**
 * Linux /proc sampling: CPU time (utime + stime) and resident memory of a process and of its
 * descendants, plus machine facts for the result file. Parsers are pure; readers touch /proc.
 */

/** The fields of /proc/<pid>/stat the harness uses. Times are in clock ticks (USER_HZ). */
export interface ProcStat {
  readonly pid: number;
  readonly comm: string;
  readonly state: string;
  readonly ppid: number;
  readonly utimeTicks: number;
  readonly stimeTicks: number;
  /** Start time after boot in ticks: with the pid, identifies one process across pid reuse. */
  readonly startTicks: number;
}

/**
 * Parses one /proc/<pid>/stat line. The command name sits in parentheses and may itself contain
 * spaces and parentheses, so fields are counted from the LAST ')'.
 */
export function parseProcStat(text: string): ProcStat {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) {
    throw new Error(`unparseable /proc stat line: ${text.slice(0, 80)}`);
  }
  const pid = Number(text.slice(0, open).trim());
  const comm = text.slice(open + 1, close);
  // After ") ": field 3 (state) is index 0, so field k is index k - 3.
  const rest = text.slice(close + 2).trim().split(/\s+/);
  const field = (k: number): number => {
    const v = Number(rest[k - 3]);
    if (!Number.isFinite(v)) {
      throw new Error(`/proc stat of pid ${pid}: field ${k} is not a number`);
    }
    return v;
  };
  return {
    pid,
    comm,
    state: rest[0] ?? "?",
    ppid: field(4),
    utimeTicks: field(14),
    stimeTicks: field(15),
    startTicks: field(22),
  };
}

/** VmRSS in kB from the text of /proc/<pid>/status; null when absent (kernel thread, zombie). */
export function parseVmRssKb(statusText: string): number | null {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(statusText);
  return m ? Number(m[1]) : null;
}

/**
 * Where a process's resident memory is, in kB, from the text of /proc/<pid>/smaps: the pages of
 * its executable (`code`: r-xp, `rodata`: r--p, `data`: the rest of its mappings), the malloc
 * heap (`[heap]`), anonymous mappings under 1 MiB (`smallAnon`: V8's heap pages are 256 KiB) and
 * larger ones (`largeAnon`), and everything else (`other`: libraries, stacks, ...).
 */
export interface SmapsGroups {
  readonly code: number;
  readonly rodata: number;
  readonly data: number;
  readonly heap: number;
  readonly smallAnon: number;
  readonly largeAnon: number;
  readonly other: number;
}

/** Groups smaps' `Rss:` lines as SmapsGroups; `exe` is the executable's path (/proc/<pid>/exe). */
export function parseSmapsGroups(text: string, exe: string): SmapsGroups {
  const g = { code: 0, rodata: 0, data: 0, heap: 0, smallAnon: 0, largeAnon: 0, other: 0 };
  let key: keyof typeof g = "other";
  for (const line of text.split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ *(.*)$/.exec(line);
    if (m) {
      const [, from, to, perm, path] = m;
      const kB = (parseInt(to!, 16) - parseInt(from!, 16)) / 1024;
      if (path === exe) {
        key = perm!.startsWith("r-x") ? "code" : perm!.startsWith("r--") ? "rodata" : "data";
      } else if (path === "[heap]") key = "heap";
      else if (path === "") key = kB < 1024 ? "smallAnon" : "largeAnon";
      else key = "other";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line);
    if (rss) g[key] += Number(rss[1]);
  }
  return g;
}

/** SmapsGroups of a live process; null when it is gone or unreadable. */
export function readSmapsGroups(pid: number): SmapsGroups | null {
  try {
    return parseSmapsGroups(
      Deno.readTextFileSync(`/proc/${pid}/smaps`),
      Deno.readLinkSync(`/proc/${pid}/exe`),
    );
  } catch {
    return null;
  }
}

/** The CPU model line of /proc/cpuinfo (x86 "model name", Arm "Model"/"Hardware"), or "unknown". */
export function parseCpuModel(cpuinfo: string): string {
  for (const key of ["model name", "Model", "Hardware", "cpu model"]) {
    const m = new RegExp(`^${key}\\s*:\\s*(.+)$`, "m").exec(cpuinfo);
    if (m) return m[1]!.trim();
  }
  return "unknown";
}

/** Number of "processor" entries in /proc/cpuinfo. */
export function countCpus(cpuinfo: string): number {
  return (cpuinfo.match(/^processor\s*:/gm) ?? []).length;
}

/** Clock ticks per second for /proc times; `getconf CLK_TCK`, else Linux's fixed USER_HZ 100. */
export async function clockTicksPerSecond(): Promise<number> {
  try {
    const out = await new Deno.Command("getconf", { args: ["CLK_TCK"], stdout: "piped" }).output();
    const v = Number(new TextDecoder().decode(out.stdout).trim());
    if (out.success && Number.isInteger(v) && v > 0) return v;
  } catch {
    // getconf missing: fall through
  }
  return 100;
}

/** Reads /proc/<pid>/stat; null when the process is gone. */
export function readProcStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return null;
  }
}

/** VmRSS of a process in kB; null when the process is gone. */
export function readRssKb(pid: number): number | null {
  try {
    return parseVmRssKb(Deno.readTextFileSync(`/proc/${pid}/status`));
  } catch {
    return null;
  }
}

/** Every descendant pid of `root` (children, grandchildren, ...), from one scan of /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!e.isDirectory || !/^\d+$/.test(e.name)) continue;
    const st = readProcStat(Number(e.name));
    if (!st) continue;
    const list = children.get(st.ppid);
    if (list) list.push(st.pid);
    else children.set(st.ppid, [st.pid]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()!) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** CPU ticks and RSS of one process and (separately) the sum over a set of other processes. */
export interface CpuMemSample {
  /** performance.now() when sampled. */
  readonly atMs: number;
  readonly mainTicks: number;
  readonly mainRssKb: number;
  /** Per pid ticks of the other processes (providers), so deltas use only pids seen twice. */
  readonly otherTicks: ReadonlyMap<number, number>;
  readonly otherRssKb: number;
}

/**
 * Samples `main` and `others`. Throws when `main` is gone: a runtime that died mid-workload must
 * not read as an idle one.
 */
export function sampleCpuMem(main: number, others: readonly number[]): CpuMemSample {
  const atMs = performance.now();
  const st = readProcStat(main);
  const rss = readRssKb(main);
  if (!st || rss === null) throw new Error(`runtime process ${main} is gone`);
  const otherTicks = new Map<number, number>();
  let otherRssKb = 0;
  for (const pid of others) {
    const o = readProcStat(pid);
    if (!o) continue;
    otherTicks.set(pid, o.utimeTicks + o.stimeTicks);
    otherRssKb += readRssKb(pid) ?? 0;
  }
  return { atMs, mainTicks: st.utimeTicks + st.stimeTicks, mainRssKb: rss, otherTicks, otherRssKb };
}

/** CPU use between two samples in percent of one core: runtime alone and the others' total. */
export function cpuPercent(
  a: CpuMemSample,
  b: CpuMemSample,
  ticksPerSecond: number,
): { main: number; others: number } {
  const wallS = (b.atMs - a.atMs) / 1000;
  if (wallS <= 0) throw new RangeError("cpuPercent: samples are not in time order");
  let other = 0;
  for (const [pid, ticks] of b.otherTicks) {
    const before = a.otherTicks.get(pid);
    if (before !== undefined) other += ticks - before;
  }
  const pct = (ticks: number) => (ticks / ticksPerSecond / wallS) * 100;
  return { main: pct(b.mainTicks - a.mainTicks), others: pct(other) };
}

/** Machine facts recorded with every result file. */
export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memTotalMb: number | null;
  readonly kernel: string;
  readonly arch: string;
}

/** Reads CPU model, core count, memory and kernel release. */
export function machineInfo(): MachineInfo {
  let cpuinfo = "";
  let meminfo = "";
  try {
    cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
    meminfo = Deno.readTextFileSync("/proc/meminfo");
  } catch {
    // not Linux: leave blanks; the harness needs /proc anyway and fails later with a clear error
  }
  const mem = /^MemTotal:\s+(\d+)\s+kB$/m.exec(meminfo);
  return {
    cpuModel: parseCpuModel(cpuinfo),
    cores: countCpus(cpuinfo) || navigator.hardwareConcurrency,
    memTotalMb: mem ? Math.round(Number(mem[1]) / 1024) : null,
    kernel: Deno.osRelease(),
    arch: Deno.build.arch,
  };
}

/** The 1/5/15-minute load averages (how busy the shared machine was). */
export function loadAverage(): [number, number, number] | null {
  try {
    const parts = Deno.readTextFileSync("/proc/loadavg").split(" ").map(Number);
    return [parts[0]!, parts[1]!, parts[2]!];
  } catch {
    return null;
  }
}
