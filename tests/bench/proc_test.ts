import assert from "node:assert/strict";
import {
  countCpus,
  cpuPercent,
  descendants,
  parseCpuModel,
  parseProcStat,
  parseSmapsGroups,
  parseVmRssKb,
  readProcStat,
  readRssKb,
  sampleCpuMem,
} from "../../bench/lib/proc.ts";

// A real line layout: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime ...
const STAT = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 1200 0 3 0 250 75 9 8 20 0 6 0 " +
  "123456 18242708 17544 18446744073709551615 1 1 0 0 0 0 0 16781312 1026 0 0 0 17 1 0 0 0 0 0";

Deno.test("parseProcStat counts fields after the last ')' of a command name with spaces", () => {
  const st = parseProcStat(STAT);
  assert.equal(st.pid, 4242);
  assert.equal(st.comm, "my (odd) name");
  assert.equal(st.state, "S");
  assert.equal(st.ppid, 17);
  assert.equal(st.utimeTicks, 250);
  assert.equal(st.stimeTicks, 75);
  assert.equal(st.startTicks, 123456);
});

Deno.test("parseProcStat rejects a line without a command name", () => {
  assert.throws(() => parseProcStat("garbage"), /unparseable/);
});

Deno.test("parseVmRssKb reads VmRSS and returns null when it is absent", () => {
  assert.equal(
    parseVmRssKb("Name:\tdeno\nVmPeak:\t  900 kB\nVmRSS:\t   81234 kB\nThreads: 6\n"),
    81234,
  );
  assert.equal(parseVmRssKb("Name:\tkthreadd\nThreads: 1\n"), null);
});

Deno.test("parseCpuModel reads x86 and Arm cpuinfo, countCpus counts processors", () => {
  const x86 =
    "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
  assert.equal(parseCpuModel(x86), "AMD EPYC 7B13");
  assert.equal(countCpus(x86), 2);
  const pi =
    "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
  assert.equal(parseCpuModel(pi), "Raspberry Pi 4 Model B Rev 1.4");
  assert.equal(countCpus(pi), 1);
  assert.equal(parseCpuModel(""), "unknown");
});

Deno.test("cpuPercent counts only pids present in both samples", () => {
  const a = {
    atMs: 0,
    mainTicks: 100,
    mainRssKb: 1,
    otherTicks: new Map([[1, 10], [2, 50]]),
    otherRssKb: 0,
  };
  const b = {
    atMs: 2000,
    mainTicks: 150,
    mainRssKb: 1,
    otherTicks: new Map([[1, 30], [3, 999]]),
    otherRssKb: 0,
  };
  const pct = cpuPercent(a, b, 100);
  assert.equal(pct.main, 25); // 50 ticks = 0.5 s over 2 s
  assert.equal(pct.others, 10); // pid 1 only: 20 ticks = 0.2 s over 2 s
  assert.throws(() => cpuPercent(b, a, 100), RangeError);
});

Deno.test("readProcStat, readRssKb and descendants see a real child process", async () => {
  const self = readProcStat(Deno.pid);
  assert.ok(self);
  assert.equal(self.pid, Deno.pid);
  assert.ok((readRssKb(Deno.pid) ?? 0) > 0);
  const child = new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
  try {
    assert.ok(descendants(Deno.pid).includes(child.pid));
    const s = sampleCpuMem(Deno.pid, [child.pid]);
    assert.ok(s.otherTicks.has(child.pid));
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  assert.equal(readProcStat(child.pid), null);
  assert.throws(() => sampleCpuMem(child.pid, []), /gone/);
});

Deno.test("parseSmapsGroups sums Rss by mapping: the executable's code/rodata/data, [heap], small and large anonymous, other", () => {
  const exe = "/usr/bin/deno";
  const map = (range: string, perm: string, path: string, rssKb: number) =>
    `${range} ${perm} 00000000 08:01 1234 ${path}\nSize: 4 kB\nRss: ${rssKb} kB\nPss: 1 kB\n`;
  const text = [
    map("55d000000000-55d000100000", "r--p", exe, 100),
    map("55d000100000-55d000900000", "r-xp", exe, 700),
    map("55d000900000-55d000a00000", "rw-p", exe, 30),
    map("55d001000000-55d001200000", "rw-p", "[heap]", 200),
    // 256 KiB: a V8 heap page; 2 MiB: a large region; an anonymous line has no path.
    map("7f0000000000-7f0000040000", "rw-p", "", 256).replace(" 1234 \n", " 0\n"),
    map("7f0000100000-7f0000300000", "rw-p", "", 40).replace(" 1234 \n", " 0\n"),
    map("7f0000400000-7f0000500000", "r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6", 900),
    map("7ffc00000000-7ffc00021000", "rw-p", "[stack]", 12),
  ].join("");
  assert.deepStrictEqual(parseSmapsGroups(text, exe), {
    code: 700,
    rodata: 100,
    data: 30,
    heap: 200,
    smallAnon: 256,
    largeAnon: 40,
    other: 912,
  });
});
