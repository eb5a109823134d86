/**
 * Preloaded into a test process by scripts/mutant_tests.ts while Stryker's initial test run
 * builds the coverage map: when the process ends, the ids of the mutants whose code ran (the
 * instrumented code counts them in `globalThis.__stryker__.mutantCoverage`) are written to
 * MUTATE_COVERAGE_OUT.
 */
const out = Deno.env.get("MUTATE_COVERAGE_OUT");

interface StrykerNamespace {
  mutantCoverage?: {
    static?: Record<string, number>;
    perTest?: Record<string, Record<string, number>>;
  };
}

if (out) {
  globalThis.addEventListener("unload", () => {
    const ns = (globalThis as { __stryker__?: StrykerNamespace }).__stryker__;
    const cov = ns?.mutantCoverage;
    const ids = new Set(Object.keys(cov?.static ?? {}));
    for (const perTest of Object.values(cov?.perTest ?? {})) {
      for (const id of Object.keys(perTest)) ids.add(id);
    }
    Deno.writeTextFileSync(out, JSON.stringify([...ids]));
  });
}
