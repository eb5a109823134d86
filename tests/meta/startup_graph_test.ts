/**
 * What the runtime loads at start-up is what every configuration pays for (bench/README.md,
 * "Footprint"): the behavior-tree engine (with its XML parser) and the InfluxDB client are loaded
 * on demand, only when the configuration enables automation or telemetry.
 */
import assert from "node:assert/strict";

interface GraphModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

/** The modules `entry` loads through static imports alone (dynamic imports not followed). */
async function staticGraph(entry: string): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: GraphModule[];
    redirects: Record<string, string>;
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const todo = [...info.roots];
  while (todo.length > 0) {
    const spec = todo.pop()!;
    const resolved = info.redirects[spec] ?? spec;
    if (seen.has(resolved)) continue;
    seen.add(resolved);
    for (const d of bySpecifier.get(resolved)?.dependencies ?? []) {
      if (d.code && !d.isDynamic) todo.push(d.code.specifier);
    }
  }
  return seen;
}

Deno.test("src/main.ts loads neither the tree engine, its XML parser nor the InfluxDB client up front", async () => {
  const graph = [...await staticGraph("../../src/main.ts")];
  assert.ok(graph.some((s) => s.endsWith("/src/runtime.ts")), "the graph is the runtime's");
  const eager = graph.filter((s) =>
    s.includes("/src/automation/bt/") || /^npm:\/?(saxes|@influxdata\/influxdb-client)@/.test(s)
  );
  assert.deepStrictEqual(eager, []);
});

Deno.test("the runtime does not load node:path (its own POSIX helpers are src/common/paths.ts)", async () => {
  const graph = [...await staticGraph("../../src/main.ts")];
  assert.deepStrictEqual(graph.filter((s) => s === "node:path"), []);
});
