/**
 * deno run -A bench/config_check_scale.ts [--reps 3]
 *
 * How long `--check-config`'s work (loadConfig in check mode, nothing spawned) takes on a file of
 * N unknown keys in one mapping, N warnings each located in the same large mapping, for N = 10,000
 * to 40,000: the README's "checking takes time linear in the file" (the old test's requirement was
 * 40,000 keys within 10 s). The milliseconds per key should stay flat as N grows. Best of `--reps`
 * per size, after one warm-up. tests/config/linear_check_test.ts asserts the work counter (steps
 * per diagnostic), never a time. Not a test.
 */
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { reps: { type: "string", default: "3" } },
});
const reps = Math.max(1, Number(values.reps));

/** The file tests/config/linear_check_test.ts checks: N unknown keys under `http:`. */
function unknownKeys(n: number): string {
  const lines = ["providers: [{id: p0, command: prov}]", "http:"];
  for (let i = 0; i < n; i++) lines.push(`  unknown_${i}: ${i}`);
  return lines.join("\n");
}

function check(yaml: string): number {
  const started = performance.now();
  const result = loadConfig(yaml, {
    path: "/etc/rig/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => true,
    commandExists: () => true,
    cwd: "/var/lib/rig",
  });
  const elapsed = performance.now() - started;
  if (result.diagnostics.length === 0) throw new Error("no diagnostics: not the file meant");
  return elapsed;
}

check(unknownKeys(1000)); // warm-up
for (const n of [10_000, 20_000, 40_000]) {
  const yaml = unknownKeys(n);
  let best = Infinity;
  for (let r = 0; r < reps; r++) best = Math.min(best, check(yaml));
  const kib = (new TextEncoder().encode(yaml).length / 1024).toFixed(0);
  console.log(
    `${n} unknown keys (${kib} KiB): ${best.toFixed(0)} ms, ` +
      `${((best / n) * 1000).toFixed(1)} µs per key (best of ${reps})`,
  );
}
