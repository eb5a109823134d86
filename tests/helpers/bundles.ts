/**
 * The runtime and the simulated provider as `deno task bundle` builds them (scripts/bundle.ts),
 * built once per test process into a temporary folder: what `deno task start` and the compile
 * tasks run. The folder is outside the repository, so `deno run` needs `BUNDLE_RUN_CONFIG` to
 * resolve the npm packages the bundles leave external.
 */
import { buildAll, REPO_ROOT } from "../../scripts/bundle.ts";

/** `deno run` flag that gives a bundle outside the repository the repository's import map. */
export const BUNDLE_RUN_CONFIG = `--config=${REPO_ROOT.pathname}deno.json`;

let built: Promise<{ runtime: string; sim: string }> | null = null;

/** The bundles' entry modules (built on the first call; removed when the process ends). */
export function bundles(): Promise<{ runtime: string; sim: string }> {
  built ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-bundles-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // best effort
      }
    });
    const out = await buildAll(dir);
    return { runtime: out.runtime!, sim: out.sim! };
  })();
  return built!;
}
