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

Deno.test("readProcessStats reads this process's RSS and CPU time", () => {
  const s = readProcessStats();
  assert.ok(s.rssBytes > 1024 * 1024, `rss ${s.rssBytes}`);
  assert.ok(s.heapUsedBytes > 0 && s.heapUsedBytes <= s.heapTotalBytes, JSON.stringify(s));
  if (Deno.build.os === "linux") assert.ok(s.cpuSeconds !== null && s.cpuSeconds > 0);
});
