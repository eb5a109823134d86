/**
 * Builds the runtime and the simulated provider as bundles (`deno task bundle`): what `deno task
 * start`, the compile tasks and the bench run.
 *
 * Why (bench/README.md, "Footprint", fourth round): a Deno process pays for every module it loads
 * — each `.ts` module is kept as its transpiled text with an inline source map (the original
 * source inside it, base64) plus V8's copy of that map's URL, a module record and its own
 * compile caches. The runtime loads ~200 modules, the sim ~110. As one entry module plus a few
 * chunks of plain JavaScript, the runtime idles at 71–73 MiB instead of 83–85 at 10 providers,
 * and a polled sim at 45.2–45.6 instead of 48.5–48.8 MiB.
 *
 * What: `deno bundle` (esbuild) with `--code-splitting`, so every dynamic `import()` stays a
 * separate chunk loaded on first use (console files, request validators, OpenAPI document,
 * behavior-tree engine). The npm packages that are imported on demand (`EXTERNAL_PACKAGES`) stay
 * outside: Deno resolves and loads them at run time exactly as from source (the same build of
 * each package; the bare specifiers resolve through deno.json's import map, which `deno compile`
 * applies at build time and `deno run` finds by walking up from the bundle's folder: a bundle
 * built outside the repository needs `--config <repo>/deno.json`).
 *
 * Minified (`--minify`; bench/README.md, "The bundle minified: the V8 heap 2 MiB lighter"): V8
 * keeps the whole text of every module it loads, and the runtime's four start-up files were 2.5 MB
 * of it, with a line-ends table per file once a stack is formatted; minified they are 1.1 MB and
 * the runtime idles ~2 MiB lighter at 10 providers. Names are not kept (`--keep-names` wraps every
 * function in a call that renames it, and measured heavier than not minifying): nothing in the
 * code reads a class's or function's `.name`. Each file has a linked source map
 * (`--sourcemap=linked`, sources' text left out), which Deno applies to a stack trace: a logged
 * stack names the source's files, lines and columns (the frames' function names are the minified
 * ones). `deno run src/main.ts` runs the source itself.
 */

/** The repository root. */
export const REPO_ROOT = new URL("../", import.meta.url);

/** Where `deno task bundle` writes. */
export const BUNDLE_DIR = new URL("../dist/bundle/", import.meta.url);

/** Each bundle: its entry point (relative to the repository root) and its folder name. */
export const BUNDLES: ReadonlyArray<{ readonly name: string; readonly entry: string }> = [
  { name: "runtime", entry: "src/main.ts" },
  { name: "sim", entry: "examples/providers/sim/main.ts" },
];

/** npm packages the runtime loads on demand, left for Deno to load at run time. */
export const EXTERNAL_PACKAGES: readonly string[] = [
  "@influxdata/influxdb-client",
  "saxes",
  "mqtt",
];

/** Bound on one `deno bundle` run (~0.5 s here; the first run on a machine fetches esbuild). */
export const BUNDLE_TIMEOUT_MS = 120_000;

/** The `deno bundle` arguments that build `entry` into `outDir`. */
export function bundleArgs(entry: string, outDir: string): string[] {
  return [
    "bundle",
    "--quiet",
    "--platform",
    "deno",
    "--code-splitting",
    "--minify",
    "--sourcemap=linked",
    ...EXTERNAL_PACKAGES.flatMap((p) => ["--external", p]),
    "--outdir",
    outDir,
    entry,
  ];
}

/**
 * Builds `entry` (relative to the repository root) into `outDir` (emptied first, so no chunk of
 * an earlier build is left); its entry module is `<outDir>/main.js`. Throws with deno's output
 * when the build fails or outlasts `timeoutMs`.
 */
export async function buildBundle(
  entry: string,
  outDir: string,
  timeoutMs: number = BUNDLE_TIMEOUT_MS,
): Promise<string> {
  await Deno.remove(outDir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  // An aborted run is killed (SIGTERM) and resolves; the signal says it was the bound.
  const timeout = AbortSignal.timeout(timeoutMs);
  const out = await new Deno.Command(Deno.execPath(), {
    args: bundleArgs(entry, outDir),
    cwd: REPO_ROOT.pathname,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: timeout,
  }).output();
  if (timeout.aborted) {
    throw new Error(`deno bundle ${entry} did not finish within ${timeoutMs} ms`);
  }
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `deno bundle ${entry} failed (exit ${out.code}):\n${text.decode(out.stderr)}${
        text.decode(out.stdout)
      }`,
    );
  }
  const dir = outDir.replace(/\/$/, "");
  await dropSourcesContent(dir);
  const main = `${dir}/main.js`;
  await Deno.stat(main);
  return main;
}

/**
 * Takes the sources' text out of every source map in `dir`: a map is read only to turn a stack
 * trace's bundle positions into source files, lines and columns (its `mappings` and `sources`), and
 * Deno keeps a map it has read for the rest of the process, so the text would sit in memory after
 * the first error whose stack is logged.
 */
async function dropSourcesContent(dir: string): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile || !e.name.endsWith(".js.map")) continue;
    const path = `${dir}/${e.name}`;
    const map = JSON.parse(await Deno.readTextFile(path));
    delete map.sourcesContent;
    await Deno.writeTextFile(path, JSON.stringify(map));
  }
}

/** Builds every bundle into `dir` (default dist/bundle/): `{ runtime, sim }` entry modules. */
export async function buildAll(dir: string = BUNDLE_DIR.pathname): Promise<Record<string, string>> {
  const built: Record<string, string> = {};
  for (const { name, entry } of BUNDLES) {
    built[name] = await buildBundle(entry, `${dir.replace(/\/$/, "")}/${name}`);
  }
  return built;
}

if (import.meta.main) {
  const built = await buildAll();
  for (const [name, main] of Object.entries(built)) console.log(`bundled ${name}: ${main}`);
}
