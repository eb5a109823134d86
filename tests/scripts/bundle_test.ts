/**
 * `deno task bundle` (scripts/bundle.ts): what `deno task start`, the compile tasks and the bench
 * run. The bundle keeps loading on demand what the source loads on demand, leaves the on-demand
 * npm packages to Deno (the same build of each package as from source), and runs: the deploy
 * tests (tests/deploy/) start the demo from it with the compiled binary's permissions; here it
 * writes telemetry through the external InfluxDB client.
 */
import assert from "node:assert/strict";
import { buildBundle, bundleArgs, EXTERNAL_PACKAGES } from "../../scripts/bundle.ts";
import { BUNDLE_RUN_CONFIG, bundles } from "../helpers/bundles.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { VictoriaMetrics, victoriaMetricsMissing } from "../helpers/victoria_metrics.ts";
import { waitFor } from "../helpers/kernel.ts";
import { SIM_YAML } from "../helpers/sim_config.ts";

/** The bundle files `main.js` loads through static imports, transitively (names only). */
async function staticClosure(dir: string): Promise<Set<string>> {
  const seen = new Set<string>();
  const todo = ["main.js"];
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const text = await Deno.readTextFile(`${dir}/${name}`);
    // Minified, the statements share a line: each starts the text or follows a `;` or a newline.
    for (const m of text.matchAll(/(?:^|[\n;])\s*(?:import|export)[^;]*?from\s*"\.\/([^"]+)"/g)) {
      todo.push(m[1]!);
    }
    for (const m of text.matchAll(/(?:^|[\n;])\s*import\s*"\.\/([^"]+)"/g)) todo.push(m[1]!);
  }
  return seen;
}

Deno.test("bundleArgs splits chunks at dynamic imports and leaves the on-demand npm packages external", () => {
  const args = bundleArgs("src/main.ts", "/tmp/out");
  assert.deepStrictEqual(args.slice(0, 5), [
    "bundle",
    "--quiet",
    "--platform",
    "deno",
    "--code-splitting",
  ]);
  for (const p of EXTERNAL_PACKAGES) {
    assert.ok(args.join(" ").includes(`--external ${p}`), p);
  }
  assert.deepStrictEqual(args.slice(-3), ["--outdir", "/tmp/out", "src/main.ts"]);
  assert.ok(args.includes("--minify") && args.includes("--sourcemap=linked"), args.join(" "));
  assert.ok(!args.includes("--keep-names"), args.join(" "));
});

Deno.test("a bundle is minified, and the stack of an error it throws names the source's file, line and column (its linked map, the sources' text left out)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bundle-map-" });
  try {
    await Deno.mkdir(`${dir}/thrower`);
    await Deno.writeTextFile(
      `${dir}/thrower/main.ts`,
      [
        "class Spinner {",
        "  spin(n: number): number {",
        '    if (n > 2) throw new Error("spun too far: " + n);',
        "    return n + 1;",
        "  }",
        "}",
        "export function turnTheSpinner(): void {",
        "  console.log(new Spinner().spin(3));",
        "}",
        "try {",
        "  turnTheSpinner();",
        "} catch (err) {",
        "  console.log((err as Error).stack);",
        "}",
        "",
      ].join("\n"),
    );
    const main = await buildBundle(`${dir}/thrower/main.ts`, `${dir}/out`);
    const text = await Deno.readTextFile(main);
    assert.ok(!text.includes("turnTheSpinner()"), `not minified:\n${text}`);
    assert.ok(text.trimEnd().endsWith("//# sourceMappingURL=main.js.map"), text);
    const map = JSON.parse(await Deno.readTextFile(`${main}.map`));
    assert.equal(map.sourcesContent, undefined, "the sources' text is in the map");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-config", main],
      env: { NO_COLOR: "1" },
    }).output();
    const stack = new TextDecoder().decode(out.stdout);
    assert.match(stack, /spun too far: 3/);
    assert.match(stack, /thrower\/main\.ts:3:22\)/, stack);
    assert.match(stack, /thrower\/main\.ts:8:29\)/, stack);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildBundle names the entry that failed and shows deno's message", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      () => buildBundle("src/no_such_module.ts", `${dir}/out`),
      (e: Error) =>
        e.message.startsWith("deno bundle src/no_such_module.ts failed (exit 1):\nerror: ") &&
        e.message.length > 60,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildBundle stops a build that outlasts its bound and says so", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      () => buildBundle("src/main.ts", `${dir}/out`, 1),
      /^Error: deno bundle src\/main\.ts did not finish within 1 ms$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the runtime's bundle loads the console files, the request validators, the OpenAPI document and the tree engine only on demand", async () => {
  const { runtime } = await bundles();
  const dir = runtime.slice(0, runtime.lastIndexOf("/"));
  const files = [...Deno.readDirSync(dir)].map((e) => e.name);
  const eager = await staticClosure(dir);
  for (const lazy of ["_console_assets-", "_request_validators-", "openapi-"]) {
    const chunk = files.find((f) => f.startsWith(lazy));
    assert.ok(chunk, `no chunk for ${lazy}: ${files.join(", ")}`);
    assert.ok(!eager.has(chunk), `${chunk} is loaded at start-up`);
  }
  const eagerText = [...eager].map((f) => Deno.readTextFileSync(`${dir}/${f}`)).join("\n");
  assert.ok(!/<!doctype html>/i.test(eagerText), "the console's page is in the start-up code");
  // Which source files each bundle file holds: its source map's `sources`.
  const jsFiles = files.filter((f) => f.endsWith(".js"));
  const sourcesOf = (f: string): string[] => {
    const map = JSON.parse(Deno.readTextFileSync(`${dir}/${f}.map`)) as { sources: string[] };
    return map.sources.map((s) => s.replace(/^(\.\.\/)+/, ""));
  };
  for (
    const [source, what] of [
      ["src/automation/bt/bt_runner.ts", "the tree engine"],
      ["src/sparkplug/edge_node.ts", "the Sparkplug edge node"],
    ]
  ) {
    const holders = jsFiles.filter((f) => sourcesOf(f).some((s) => s.endsWith(source!)));
    assert.ok(holders.length > 0, `${what} is in no chunk`);
    assert.ok(!holders.some((f) => eager.has(f)), `${what} is in the start-up code: ${holders}`);
  }
  // An external package stays a bare specifier Deno resolves at run time: were it bundled in,
  // its specifier would be gone from every file.
  const allText = jsFiles.map((f) => Deno.readTextFileSync(`${dir}/${f}`)).join("\n");
  for (const p of EXTERNAL_PACKAGES) {
    assert.ok(
      allText.includes(`import("${p}")`) || allText.includes(`from "${p}"`) ||
        allText.includes(`from"${p}"`),
      `${p} is not imported by its bare specifier in any chunk: bundled in?`,
    );
  }
  assert.ok(eager.size < jsFiles.length, "every chunk is loaded at start-up");
});

Deno.test({
  name:
    "the bundled runtime and sim poll, and write telemetry through the external InfluxDB client",
  ignore: victoriaMetricsMissing(),
  async fn() {
    const { runtime, sim } = await bundles();
    const vm = await VictoriaMetrics.start();
    const dir = await Deno.makeTempDir({ prefix: "bundle-telemetry-" });
    const rt = await startRuntimeWithConfigOnFreePort(
      `${dir}/runtime.yaml`,
      (port) =>
        `runtime:
  name: bundle
  data_dir: ${dir}/data
http:
  port: ${port}
polling:
  interval_ms: 100
providers:
  - id: sim0
    command: ${Deno.execPath()}
    args: [run, --quiet, "${BUNDLE_RUN_CONFIG}", --allow-read, --allow-env, ${sim}, --config, ${SIM_YAML}]
telemetry:
  enabled: true
  influxdb:
    url: ${vm.url}
    token: any-token-victoria-metrics-ignores
    flush_interval_ms: 200
`,
      { entry: runtime, denoFlags: [BUNDLE_RUN_CONFIG] },
    );
    try {
      await waitFor("signal rows in VictoriaMetrics", async () => {
        await vm.forceFlush();
        return (await vm.export('{__name__=~"runtime_signal.*"}')).length > 0;
      }, 20_000);
      assert.ok(
        !/not a dependency|Cannot (find|resolve)|Import .* failed/i.test(rt.stderr()),
        rt.stderr(),
      );
    } catch (err) {
      console.error(rt.stderr());
      throw err;
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
      await vm.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
