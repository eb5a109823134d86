/**
 * What the runtime loads at start-up is what every configuration pays for (bench/README.md,
 * "Footprint"): the behavior-tree engine (with its XML parser) and the InfluxDB client are loaded
 * on demand, only when the configuration enables automation or telemetry, and the operator
 * console's files on its first request.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";

Deno.test("src/main.ts loads neither the tree engine, its XML parser nor the InfluxDB client up front", async () => {
  const graph = (await ModuleGraph.of("src/main.ts")).staticModules;
  assert.ok(graph.some((s) => s.endsWith("/src/app/kernel.ts")), "the graph is the runtime's");
  const eager = graph.filter((s) =>
    s.includes("/src/automation/bt/") || /^npm:\/?(saxes|@influxdata\/influxdb-client)@/.test(s)
  );
  assert.deepStrictEqual(eager, []);
});

Deno.test("src/main.ts loads neither the Sparkplug edge node nor MQTT.js up front (sparkplug is off by default)", async () => {
  const graph = await ModuleGraph.of("src/main.ts");
  assert.ok(
    graph.modules.some((s) => s.endsWith("/src/sparkplug/mod.ts")),
    "the edge node is in the graph (loaded on demand)",
  );
  assert.deepEqual(
    graph.staticModules.filter((s) => s.includes("/src/sparkplug/") || /^npm:\/?mqtt@/.test(s)),
    [],
  );
});

Deno.test("MQTT.js is the host adapter's (src/host/mqtt.ts, behind the MqttConnect port), imported on demand", async () => {
  const graph = await ModuleGraph.of("src/main.ts");
  const importers = graph.importersOf((s) => /^npm:\/?mqtt@/.test(s));
  assert.deepEqual(importers.map((s) => s.slice(s.indexOf("/src/"))), ["/src/host/mqtt.ts"]);
  assert.ok(graph.staticModules.some((s) => s.endsWith("/src/host/mqtt.ts")));
  assert.deepEqual(graph.staticModules.filter((s) => /^npm:\/?mqtt@/.test(s)), []);
});

Deno.test("the runtime does not load node:path (its own POSIX helpers are src/common/paths.ts)", async () => {
  const graph = (await ModuleGraph.of("src/main.ts")).staticModules;
  assert.deepStrictEqual(graph.filter((s) => s === "node:path"), []);
});

Deno.test("src/main.ts loads the operator console's files only on the first console request", async () => {
  const graph = await ModuleGraph.of("src/main.ts");
  assert.ok(graph.modules.some((s) => s.includes("/src/http/_console_assets.")), "in the graph");
  assert.deepStrictEqual(
    graph.staticModules.filter((s) => s.includes("/src/http/_console_assets.")),
    [],
  );
});

Deno.test("src/main.ts loads no Node built-in module up front (node:process, node:util: Deno's Node layer, ~3 MiB)", async () => {
  const graph = await ModuleGraph.of("src/main.ts");
  assert.deepStrictEqual(graph.staticModules.filter((s) => s.startsWith("node:")), []);
  assert.ok(graph.modules.includes("node:process"), "node:process is loaded on demand");
});
