/**
 * Preloaded into a mutant's test process (scripts/mutant_tests.ts, scripts/mutation_extra.ts)
 * when its scope names skipTests: tests whose name contains one of MUTATE_SKIP_TESTS (a JSON
 * array) are registered as ignored. They measure memory or time, which Stryker's instrumentation
 * changes, not behaviour. (`deno test --filter` cannot exclude: its regex has no lookahead.)
 */
const skip: string[] = JSON.parse(Deno.env.get("MUTATE_SKIP_TESTS") ?? "[]");

if (skip.length > 0) {
  const original = Deno.test;
  const skipped = (name: string) => skip.some((s) => name.includes(s));
  const wrapped = (...args: unknown[]): void => {
    const [a, b, c] = args;
    if (typeof a === "string" && skipped(a)) {
      const fn = typeof b === "function" ? b : c;
      (original as (d: Deno.TestDefinition) => void)({
        name: a,
        fn: fn as Deno.TestDefinition["fn"],
        ignore: true,
      });
      return;
    }
    if (typeof a === "object" && a !== null && skipped((a as Deno.TestDefinition).name)) {
      (original as (d: Deno.TestDefinition) => void)({
        ...(a as Deno.TestDefinition),
        ignore: true,
      });
      return;
    }
    (original as (...x: unknown[]) => void)(...args);
  };
  Object.assign(wrapped, original);
  (Deno as { test: unknown }).test = wrapped;
}
