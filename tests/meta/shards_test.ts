/**
 * `deno task test` runs the suite in shards (tests/shards/shard.ts): every test file must be in
 * exactly one shard, and every shard must have its module (a file left out of every shard, or a
 * shard without its module, would have its tests silently never run).
 */
import assert from "node:assert/strict";
import { shardFiles, SHARDS, testFiles } from "../shards/shard.ts";

const SHARDS_DIR = new URL("../shards/", import.meta.url);

Deno.test("every test file of tests/ is in exactly one shard of the suite, this file among them", async () => {
  const all = (await testFiles()).map((u) => u.href);
  assert.ok(all.includes(import.meta.url), "this file is listed");
  assert.ok(all.length > 100, `only ${all.length} test files found`);
  const dealt: string[] = [];
  for (let k = 0; k < SHARDS; k++) dealt.push(...(await shardFiles(k)).map((u) => u.href));
  assert.deepEqual([...dealt].sort(), all);
  assert.equal(new Set(dealt).size, dealt.length, "no file in two shards");
  assert.ok(all.every((f) => !f.startsWith(SHARDS_DIR.href)), "the shards' own folder is left out");
});

Deno.test("each shard 0 .. SHARDS-1 has its module in tests/shards/, running its own shard, and no other shard module exists", async () => {
  const modules: string[] = [];
  for await (const e of Deno.readDir(SHARDS_DIR)) {
    if (/^\d+\.ts$/.test(e.name)) modules.push(e.name);
  }
  assert.deepEqual(
    modules.sort((a, b) => parseInt(a) - parseInt(b)),
    Array.from({ length: SHARDS }, (_, k) => `${k}.ts`),
  );
  for (let k = 0; k < SHARDS; k++) {
    const text = await Deno.readTextFile(new URL(`${k}.ts`, SHARDS_DIR));
    assert.match(text, new RegExp(`^await runShard\\(${k}\\);$`, "m"), `${k}.ts runs shard ${k}`);
  }
});

Deno.test("shardFiles refuses a shard number outside 0 .. SHARDS-1, naming it", async () => {
  await assert.rejects(
    () => shardFiles(SHARDS),
    new RegExp(`shard ${SHARDS}: expected an integer from 0 to ${SHARDS - 1}`),
  );
  await assert.rejects(() => shardFiles(-1), /shard -1/);
  await assert.rejects(() => shardFiles(1.5), /shard 1.5/);
});

Deno.test("runShard registers a file that cannot be imported as a failed test named after it, and goes on with the shard's other files", async () => {
  // A copy of the shard module over a folder of its own: a_test.ts (broken at import) and
  // z_test.ts are dealt to shard 0, the SHARDS - 1 files between them one to each other shard.
  const dir = await Deno.makeTempDir({ prefix: "shards-" });
  try {
    await Deno.mkdir(`${dir}/shards`);
    await Deno.copyFile(new URL("shard.ts", SHARDS_DIR), `${dir}/shards/shard.ts`);
    await Deno.writeTextFile(
      `${dir}/shards/0.ts`,
      `import { runShard } from "./shard.ts";\nawait runShard(0);\n`,
    );
    await Deno.writeTextFile(`${dir}/a_test.ts`, `throw new Error("broken at import");\n`);
    for (let i = 1; i < SHARDS; i++) {
      const name = `m${String(i).padStart(2, "0")}_test.ts`;
      await Deno.writeTextFile(`${dir}/${name}`, `Deno.test("${name}", () => {});\n`);
    }
    await Deno.writeTextFile(`${dir}/z_test.ts`, `Deno.test("z runs", () => {});\n`);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-check", "-A", `${dir}/shards/0.ts`],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, text);
    assert.match(text, /tests\/a_test\.ts could not be imported \.\.\. FAILED/);
    assert.match(text, /broken at import/);
    assert.match(text, /z runs \.\.\. ok/);
    assert.match(text, /FAILED \| 1 passed \| 1 failed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Every .ts file under tests/ (recursively). */
async function tsFilesUnder(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) out.push(...await tsFilesUnder(new URL(`${e.name}/`, dir)));
    else if (e.name.endsWith(".ts")) out.push(new URL(e.name, dir));
  }
  return out;
}

Deno.test("no test or helper signals the test process itself: the shards run as workers of one process, and a signal to it reaches every shard's listeners (another file's service, Playwright's browsers)", async () => {
  const offenders: string[] = [];
  for (const file of await tsFilesUnder(new URL("../", import.meta.url))) {
    // Files named _*.ts are programs run as processes of their own: their pid is their own.
    if (file.pathname.split("/").at(-1)!.startsWith("_")) continue;
    const text = await Deno.readTextFile(file);
    if (/\b(Deno\.kill|process\.kill)\(\s*(Deno\.pid|process\.pid)\b/.test(text)) {
      offenders.push(file.pathname.replace(/.*\/tests\//, "tests/"));
    }
  }
  assert.deepEqual(
    offenders,
    [],
    "send a service's signals through signalStand (helpers/signals.ts)",
  );
});

Deno.test("no test or helper changes the test process's environment: the shards run as workers of one process, and a variable set there is read by every shard (another file's runtime taking it for its API token)", async () => {
  const offenders: string[] = [];
  for (const file of await tsFilesUnder(new URL("../", import.meta.url))) {
    // Files named _*.ts are programs run as processes of their own, with an environment given.
    if (file.pathname.split("/").at(-1)!.startsWith("_")) continue;
    const text = await Deno.readTextFile(file);
    if (/\bDeno\.env\.(set|delete)\(|\bprocess\.env\.[A-Za-z_]+\s*=[^=]/.test(text)) {
      offenders.push(file.pathname.replace(/.*\/tests\//, "tests/"));
    }
  }
  assert.deepEqual(offenders, [], "give a program its environment (Deno.Command's env) instead");
});
