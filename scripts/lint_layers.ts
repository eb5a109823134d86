/**
 * deno task lint:layers -- the house's structure as a check (docs/architecture.md):
 * - an import points down the layer stack, never up (RANK below);
 * - a folder is used through its mod.ts only, and another folder's `_private.ts` files never;
 * - folders of the same layer do not import each other unless SAME_LAYER_ALLOWED lists the pair;
 * - the core promise: http/, automation/, safety/ and alarms/ never reach providers/ or adpp/
 *   (type imports too): reads go through state/, writes through control/ (CORE_PROMISE);
 * - host/ touches Deno.* and is imported only by the composition root (app/ and main.ts): a
 *   run-time use of `Deno.` anywhere else (a call, a property read, `Deno` as a value) is refused
 *   with the host port to use instead; `Deno.Signal`, `Deno.FileInfo` and the like in type
 *   positions are allowed (DENO_RUNTIME_ALLOWED: host/ and provider_sdk/);
 * - provider_sdk/ is a separate product for provider authors; the runtime never imports it;
 * - no cycle between folders, and none between files (a module graph read top-down).
 * Every module is checked: `.ts` (declaration files too) and the generated `.js` ones.
 */
import ts from "typescript";

const RANK: Record<string, number> = {
  common: 0,
  config: 1,
  adpp: 1,
  events: 1,
  journal: 1, // the append-only JSONL journal shared by runs/ and audit/ (no Deno.* of its own)
  providers: 2,
  state: 3,
  control: 4,
  safety: 5,
  automation: 6,
  alarms: 6,
  runs: 6,
  audit: 6,
  telemetry: 6,
  history: 6, // the full-rate ring, the disk tier and incidents (fed by state/, read by http/)
  sparkplug: 6, // the Sparkplug B edge node: reads state/, writes through control/ (opt-in)
  http: 7,
  app: 8, // the composition root: kernel, live configuration, reload, process lifecycle
  "": 9, // src/main.ts
};

/** Imports between folders of one layer that are part of the design (`from -> to`). */
const SAME_LAYER_ALLOWED: ReadonlySet<string> = new Set([
  "events -> config", // events carry config types (modes, alarm levels)
]);

/** Folders that must never import these (the single validated path: state and control). */
const CORE_PROMISE: Readonly<Record<string, readonly string[]>> = {
  http: ["providers", "adpp"],
  automation: ["providers", "adpp"],
  safety: ["providers", "adpp"],
  alarms: ["providers", "adpp"],
  sparkplug: ["providers"], // adpp/mod.ts only for the protobuf wire primitives of its codec
};

/**
 * Folders whose modules may use `Deno.` at run time. host/ is the runtime's one door to the
 * system (style.md, "host/ the only place that touches Deno.*"). provider_sdk/ is a product of
 * its own that runs in the provider's process, not the runtime's: it owns that process's stdin,
 * stdout, stderr, signals and exit, and may not import host/ (it uses common/ and adpp/ only).
 */
const DENO_RUNTIME_ALLOWED: ReadonlySet<string> = new Set(["host", "provider_sdk"]);

/** The host port (src/host/mod.ts) that stands for a `Deno.<member>` outside host/. */
const HOST_PORT_FOR: Readonly<Record<string, string>> = {
  env: "readEnvironment (a plain read) or secretFromEnvironment (a secret)",
  args: "commandLineArguments",
  build: "operatingSystem",
  cwd: "workingDirectory",
  exit: "exitProcess",
  addSignalListener: "onSignal",
  removeSignalListener: "onSignal",
  Command: "spawnProcess, or a spawn port the composition root hands in",
};

const SRC = new URL("../src/", import.meta.url).pathname;

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}${e.name}`;
    if (e.isDirectory) yield* walk(`${p}/`);
    else if (e.name.endsWith(".ts") || e.name.endsWith(".js")) yield p;
  }
}

/** Names under which the global object itself is reachable (`globalThis.Deno` is `Deno`). */
const GLOBAL_OBJECT_NAMES: ReadonlySet<string> = new Set(["globalThis", "window", "self"]);

/** Whether the identifier `Deno` at `node` is used as a value (not in a type, not as a name). */
function isRuntimeDeno(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (ts.isQualifiedName(parent)) return false; // `Deno.Signal` in a type, `typeof Deno.env`
  if (ts.isPropertyAccessExpression(parent) && parent.name === node) {
    // `x.Deno`: the global only through the global object (`globalThis.Deno.exit`)
    return ts.isIdentifier(parent.expression) && GLOBAL_OBJECT_NAMES.has(parent.expression.text);
  }
  if (!ts.isShorthandPropertyAssignment(parent) && (parent as { name?: ts.Node }).name === node) {
    return false; // a declared name (`namespace Deno`, `{ Deno: 1 }`, a parameter called Deno)
  }
  for (let n: ts.Node = parent; !ts.isSourceFile(n); n = n.parent) {
    if (ts.isExpressionWithTypeArguments(n) && ts.isHeritageClause(n.parent)) {
      // `class X extends Deno.Y` is a value; `implements` and an interface's `extends` are types
      const clause = n.parent;
      return clause.token === ts.SyntaxKind.ExtendsKeyword && ts.isClassLike(clause.parent);
    }
    if (ts.isTypeNode(n) && !ts.isExpressionWithTypeArguments(n)) return false;
  }
  return true;
}

/** Each run-time use of `Deno` in a module: its line (1-based) and `Deno.<member>` or `Deno`. */
export function denoRuntimeUses(
  path: string,
  text: string,
): { readonly line: number; readonly member: string | null }[] {
  const kind = path.endsWith(".js") ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const uses: { line: number; member: string | null }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === "Deno" && isRuntimeDeno(node)) {
      const up = ts.isPropertyAccessExpression(node.parent) && node.parent.name === node
        ? node.parent
        : node;
      const member = ts.isPropertyAccessExpression(up.parent) && up.parent.expression === up &&
          ts.isIdentifier(up.parent.name)
        ? up.parent.name.text
        : null;
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      uses.push({ line, member });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

const IMPORT_RE =
  /^\s*(?:import|export)\b[^'"]*?from\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm;

/** Every layering problem of the modules under `root` (a path ending in `/`; src/ by default). */
export async function layerProblems(root: string = SRC): Promise<string[]> {
  const folderOf = (path: string): string => {
    const rel = path.slice(root.length);
    return rel.includes("/") ? (rel.split("/")[0])! : "";
  };
  const problems: string[] = [];
  /** file -> the files it imports (within root). */
  const fileEdges = new Map<string, string[]>();
  /** folder -> folders it imports. */
  const folderEdges = new Map<string, Set<string>>();
  for await (const file of walk(root)) {
    const from = folderOf(file);
    const text = await Deno.readTextFile(file);
    if (!DENO_RUNTIME_ALLOWED.has(from) && text.includes("Deno")) {
      for (const use of denoRuntimeUses(file, text)) {
        const what = use.member === null ? "Deno" : `Deno.${use.member}`;
        const port = (use.member !== null ? HOST_PORT_FOR[use.member] : undefined) ??
          "a host port the composition root hands in";
        const rule = from === "" || from === "app"
          ? "use host/mod.ts"
          : "take it as a port from the composition root (app/, main.ts), which gets it from host/";
        problems.push(
          `src/${
            file.slice(root.length)
          }:${use.line}: ${what} at run time outside host/; ${rule}: ${port}`,
        );
      }
    }
    const targets: string[] = [];
    fileEdges.set(file, targets);
    for (const m of text.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2];
      if (!spec!.startsWith(".")) continue;
      const target = new URL(spec!, `file://${file}`).pathname;
      if (!target.startsWith(root)) {
        problems.push(`${file.slice(root.length)}: imports outside src/: ${spec}`);
        continue;
      }
      targets.push(target);
      const to = folderOf(target);
      if (to === from) continue;
      let out = folderEdges.get(from);
      if (!out) folderEdges.set(from, out = new Set());
      out.add(to);
      const where = `src/${file.slice(root.length)}`;
      const base = target.split("/").pop() ?? "";
      if (to !== "" && base !== "mod.ts") {
        problems.push(`${where}: imports ${spec}; use ${to}/mod.ts`);
      }
      if (base.startsWith("_")) problems.push(`${where}: imports private file ${spec}`);
      if (to === "host") {
        if (from !== "" && from !== "app") {
          problems.push(`${where}: only the composition root (app/, main.ts) may import host/`);
        }
        continue;
      }
      if (to === "provider_sdk" || from === "provider_sdk") {
        if (from === "provider_sdk" && !["common", "adpp"].includes(to)) {
          problems.push(`${where}: provider_sdk may only use common/ and adpp/`);
        }
        if (to === "provider_sdk") {
          problems.push(`${where}: the runtime must not import provider_sdk/`);
        }
        continue;
      }
      if (from === "host") {
        if (to !== "common") problems.push(`${where}: host/ may only import common/`);
        continue;
      }
      if (CORE_PROMISE[from]?.includes(to)) {
        problems.push(
          `${where}: ${from}/ must not reach ${to}/ (reads go through state/, writes through control/)`,
        );
      }
      const rf = RANK[from];
      const rt = RANK[to];
      if (rf === undefined || rt === undefined) {
        problems.push(`${where}: folder not in the layer table (${from || "."} -> ${to || "."})`);
      } else if (rt > rf) {
        problems.push(
          `${where}: upward import ${from || "."} (layer ${rf}) -> ${to} (layer ${rt})`,
        );
      } else if (rt === rf && !SAME_LAYER_ALLOWED.has(`${from} -> ${to}`)) {
        problems.push(
          `${where}: ${from}/ imports ${to}/ of the same layer (${rf}); not in SAME_LAYER_ALLOWED`,
        );
      }
    }
  }
  const label = (f: string) => (f === "" ? "." : f);
  for (const cycle of cycles(folderEdges)) {
    problems.push(`folder cycle: ${cycle.map(label).join(" -> ")}`);
  }
  for (const cycle of cycles(fileEdges)) {
    problems.push(`file cycle: ${cycle.map((f) => `src/${f.slice(root.length)}`).join(" -> ")}`);
  }
  return problems;
}

/** Each cycle of a directed graph once (its first node as found first), closed back to it. */
function cycles<T extends Iterable<string>>(edges: ReadonlyMap<string, T>): string[][] {
  const out: string[][] = [];
  const seen = new Set<string>();
  const reported = new Set<string>();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      const s = state.get(next);
      if (s === "open") {
        const cycle = [...stack.slice(stack.indexOf(next)), next];
        const key = [...cycle.slice(0, -1)].sort().join("\u0000");
        if (!reported.has(key)) {
          reported.add(key);
          out.push(cycle);
        }
      } else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, "done");
    seen.add(node);
  };
  for (const node of edges.keys()) if (!seen.has(node)) visit(node);
  return out;
}

if (import.meta.main) {
  const problems = await layerProblems();
  if (problems.length > 0) {
    for (const p of problems) console.error(`error: ${p}`);
    console.error(`lint:layers: ${problems.length} problem(s)`);
    Deno.exit(1);
  }
  console.log("lint:layers: ok");
}
