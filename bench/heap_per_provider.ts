/**
 * deno run -A bench/heap_per_provider.ts [--counts 10,40] [--warm 60] [--runtime CMD] [--top 30]
 *
 * What a provider holds in the V8 heap (issue 39, item 3): the bundle (or `--runtime`) polling
 * each count of simulated providers (4 devices each) at 100 ms, under the inspector; after
 * `--warm` seconds one heap snapshot (HeapProfiler.takeHeapSnapshot over the inspector's
 * WebSocket: it collects garbage first, so it counts what is live). The self sizes are summed by
 * node type and constructor name, and the difference between the first and the last count,
 * divided by the providers between them, is printed: bytes and objects per added provider, the
 * `--top` largest rows and the total by type (`native` holds ArrayBuffer backing stores).
 * `--base CMD` compares two runtimes instead (a bundle against its parent, say): each polls the
 * first count's providers, and the rows are what `--runtime` holds over `--base`, in bytes, the
 * largest differences either way first. Not a test; the runtime's RSS per provider is
 * bench/memory_per_provider.ts.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** How long each runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;
/** How long the snapshot may take to arrive. */
const SNAPSHOT_TIMEOUT_MS = 120_000;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    counts: { type: "string", default: "10,40" },
    warm: { type: "string", default: "60" },
    runtime: { type: "string" },
    top: { type: "string", default: "30" },
    base: { type: "string" },
  },
});
const counts = values.counts.split(",").map(Number);
const warmS = Number(values.warm);
const top = Number(values.top);

/** Self size and count per "type|name". */
type Summary = Map<string, { count: number; bytes: number }>;

async function snapshotOf(port: number): Promise<Summary> {
  const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(list[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const chunks: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error("no heap snapshot")), SNAPSHOT_TIMEOUT_MS);
      ws.onmessage = (e) => {
        const m = JSON.parse(e.data);
        if (m.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(m.params.chunk);
        if (m.id === 1) resolve();
      };
      ws.send(JSON.stringify({ id: 1, method: "HeapProfiler.takeHeapSnapshot", params: {} }));
    });
  } finally {
    clearTimeout(timer);
    ws.close();
  }
  const snap = JSON.parse(chunks.join(""));
  const fields = snap.snapshot.meta.node_fields as string[];
  const types = snap.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const [ti, ni, si] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const nodes = snap.nodes as number[];
  const out: Summary = new Map();
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + ti!]!]!;
    // Strings are named by their text, code by its source: one row per kind.
    const name = type.includes("string") ? "" : String(snap.strings[nodes[i + ni!]!]).slice(0, 60);
    const key = `${type}|${name}`;
    const row = out.get(key) ?? { count: 0, bytes: 0 };
    row.count++;
    row.bytes += nodes[i + si!]!;
    out.set(key, row);
  }
  return out;
}

async function measure(cmd: readonly string[], providers: number): Promise<Summary> {
  const dir = await Deno.makeTempDir({ prefix: "heap-per-provider-" });
  try {
    await Deno.writeTextFile(`${dir}/sim.yaml`, simProviderYaml());
    const port = freePort();
    const inspect = freePort();
    await Deno.writeTextFile(
      `${dir}/runtime.yaml`,
      runtimeYaml({
        providerCount: providers,
        port,
        providerCmd: defaultCommands(REPO).provider,
        simConfigPath: `${dir}/sim.yaml`,
        pollIntervalMs: 100,
        dataDir: `${dir}/data`,
      }),
    );
    // The inspector flag goes right after `run` (deno run --inspect=... the rest).
    const at = cmd.indexOf("run");
    if (at < 0) throw new Error(`not a 'deno run' command: ${cmd.join(" ")}`);
    const withInspector = [
      ...cmd.slice(0, at + 1),
      `--inspect=127.0.0.1:${inspect}`,
      ...cmd.slice(at + 1),
    ];
    const rt = await RuntimeProcess.start({
      cmd: withInspector,
      configPath: `${dir}/runtime.yaml`,
      port,
      expectedProviders: providers,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    try {
      await new Promise((r) => setTimeout(r, warmS * 1000));
      return await snapshotOf(inspect);
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const cmd = values.runtime ? splitCommand(values.runtime) : defaultCommands(REPO).runtime;
await buildAll();
const base = values.base ? splitCommand(values.base) : null;
const first = await measure(base ?? cmd, counts[0]!);
const last = await measure(cmd, base ? counts[0]! : counts.at(-1)!);
// Per added provider; against a base, the whole difference.
const between = base ? 1 : counts.at(-1)! - counts[0]!;
const rows = [...new Set([...first.keys(), ...last.keys()])].map((key) => {
  const a = first.get(key) ?? { count: 0, bytes: 0 };
  const b = last.get(key) ?? { count: 0, bytes: 0 };
  return { key, bytes: (b.bytes - a.bytes) / between, count: (b.count - a.count) / between };
}).sort((x, y) => base ? Math.abs(y.bytes) - Math.abs(x.bytes) : y.bytes - x.bytes);
const total = rows.reduce((s, r) => s + r.bytes, 0);
console.log(
  base
    ? `live V8 heap of the runtime over the base at ${counts[0]} providers: ${
      Math.round(total / 1024)
    } KiB`
    : `live V8 heap per added provider (${counts[0]} -> ${counts.at(-1)}): ${
      Math.round(total / 1024)
    } KiB`,
);
for (const r of rows.slice(0, top)) {
  console.log(
    `${(r.bytes / 1024).toFixed(1).padStart(7)} KiB ${r.count.toFixed(1).padStart(7)}  ${r.key}`,
  );
}
const byType = new Map<string, number>();
for (const r of rows) {
  const type = r.key.split("|")[0]!;
  byType.set(type, (byType.get(type) ?? 0) + r.bytes);
}
console.log(
  "by type: " +
    [...byType].sort((a, b) => b[1] - a[1]).map(([t, b]) => `${t} ${(b / 1024).toFixed(1)} KiB`)
      .join(", "),
);
