/** cpuSecondsFromProcStat and readProcessStats (this process's RSS and CPU time). */
import assert from "node:assert/strict";
import { cpuSecondsFromProcStat, readProcessStats } from "../../src/host/mod.ts";

Deno.test("cpuSecondsFromProcStat adds utime and stime after a command name holding spaces and parentheses", () => {
  // Fields 1-2, then state (3) ... utime (14) = 250, stime (15) = 130 ticks.
  const stat = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 130 0 0 20 0 9 0";
  assert.equal(cpuSecondsFromProcStat(stat), 3.8);
  assert.equal(cpuSecondsFromProcStat("no parenthesis here"), null);
  assert.equal(cpuSecondsFromProcStat("1 (x) S 1 2"), null, "too few fields");
});

Deno.test("readProcessStats reads this process's RSS and CPU time", async () => {
  const s = await readProcessStats();
  assert.ok(s.rssBytes > 1024 * 1024, `rss ${s.rssBytes}`);
  assert.ok(s.heapUsedBytes > 0 && s.heapUsedBytes <= s.heapTotalBytes, JSON.stringify(s));
  if (Deno.build.os === "linux") assert.ok(s.cpuSeconds !== null && s.cpuSeconds > 0);
});

/**
 * A process that may not read /proc/self (anything short of --allow-all: the compiled binary's
 * permissions) still gets its CPU time, through node:process, which process_stats.ts imports at
 * that first read (tests/meta/startup_graph_test.ts keeps it out of the start-up).
 */
Deno.test("readProcessStats without --allow-all reads the CPU time through node:process", async () => {
  if (Deno.build.os !== "linux") return;
  const module = new URL("../../src/host/process_stats.ts", import.meta.url).href;
  const dir = await Deno.makeTempDir();
  const file = `${dir}/read_stats.ts`;
  await Deno.writeTextFile(
    file,
    `import { readProcessStats } from ${JSON.stringify(module)};
    let refused = "";
    try { Deno.readTextFileSync("/proc/self/stat"); } catch (e) { refused = (e as Error).name; }
    const s = await readProcessStats();
    const t = await readProcessStats();
    console.log(JSON.stringify({ refused, cpu: s.cpuSeconds, again: t.cpuSeconds }));
    `,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-check", "--allow-read", "--no-prompt", file],
    stdout: "piped",
    stderr: "piped",
  }).output().finally(() => Deno.remove(dir, { recursive: true }));
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal(r.refused, "NotCapable", "the child may not read /proc/self/stat");
  assert.ok(typeof r.cpu === "number" && r.cpu > 0, JSON.stringify(r));
  assert.ok(r.again >= r.cpu, JSON.stringify(r));
});
