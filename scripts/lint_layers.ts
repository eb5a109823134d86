/**
 * deno task lint:layers — fails on an import that points up the layer stack, reaches into another
 * folder without going through its mod.ts, or touches a `_private.ts` file of another folder.
 *
 * Layers, low to high (../shared/style.md): common -> {config, adpp, events, journal} -> providers -> state
 * -> control -> safety -> {automation, alarms, runs, audit, telemetry} -> http -> runtime.ts/main.ts.
 * host/ touches Deno.* and is imported only by the composition root (runtime.ts, main.ts).
 * provider_sdk/ is a separate product for provider authors; the runtime never imports it.
 * Every module is checked: `.ts` (declaration files too) and the generated `.js` ones.
 */
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
  http: 7,
  "": 9, // src/runtime.ts, src/main.ts
};
const SRC = new URL("../src/", import.meta.url).pathname;

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}${e.name}`;
    if (e.isDirectory) yield* walk(`${p}/`);
    else if (e.name.endsWith(".ts") || e.name.endsWith(".js")) yield p;
  }
}

const IMPORT_RE =
  /^\s*(?:import|export)\b[^'"]*?from\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm;

/** Every layering problem of the modules under `root` (a path ending in `/`; src/ by default). */
export async function layerProblems(root: string = SRC): Promise<string[]> {
  const folderOf = (path: string): string => {
    const rel = path.slice(root.length);
    return rel.includes("/") ? rel.split("/")[0] : "";
  };
  const problems: string[] = [];
  for await (const file of walk(root)) {
    const from = folderOf(file);
    const text = await Deno.readTextFile(file);
    for (const m of text.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2];
      if (!spec.startsWith(".")) continue;
      const target = new URL(spec, `file://${file}`).pathname;
      if (!target.startsWith(root)) {
        problems.push(`${file.slice(root.length)}: imports outside src/: ${spec}`);
        continue;
      }
      const to = folderOf(target);
      if (to === from) continue;
      const where = `src/${file.slice(root.length)}`;
      const base = target.split("/").pop() ?? "";
      if (to !== "" && base !== "mod.ts") {
        problems.push(`${where}: imports ${spec}; use ${to}/mod.ts`);
      }
      if (base.startsWith("_")) problems.push(`${where}: imports private file ${spec}`);
      if (to === "host") {
        if (from !== "") {
          problems.push(`${where}: only the composition root (src/*.ts) may import host/`);
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
      const rf = RANK[from];
      const rt = RANK[to];
      if (rf === undefined || rt === undefined) {
        problems.push(`${where}: folder not in the layer table (${from || "."} -> ${to || "."})`);
      } else if (rt > rf) {
        problems.push(
          `${where}: upward import ${from || "."} (layer ${rf}) -> ${to} (layer ${rt})`,
        );
      }
    }
  }
  return problems;
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
