/**
 * The suite as `deno task test` runs it: every test file of tests/ in one of {@link SHARDS}
 * shards (tests/shards/0.ts ... 63.ts), each shard one isolate that imports its files one after
 * the other, and `deno test --parallel` running the shards side by side.
 *
 * Why: `deno test` gives every test file an isolate of its own, and an isolate costs ~0.3 CPU-s
 * before the file's first test runs (0.45 with the kernel's modules loaded): over a thousand
 * files, a fifth of the suite's CPU on the two cores CI has (measured, bench/README.md and the
 * commit that brought this in). In a shard the modules are loaded once, and the operator console
 * tests share one Chromium per shard (tests/helpers/browser.ts: a Chromium per isolate).
 *
 * What a shard does not change: the tests of a file run in the file's order, each with Deno's
 * sanitizers; a failure names the test's own file and line. What it does: module-level state of a
 * file (its helpers' caches: the bundles, the Chromium) is shared with the files of its shard; a
 * file that cannot be imported is a failed test named after it (runShard).
 * `deno test -A tests/x_test.ts` (or `deno task test:isolated`) still runs files alone.
 *
 * The files are listed when the shard starts (a new test file needs no registration): names as
 * `deno test` finds them (`*_test.ts`, `*.test.ts`, `test.ts`, and the other extensions), under
 * tests/ but outside this folder, sorted, and dealt out in turn, so each shard holds a share of
 * every folder. They are imported at run time, so `deno test` does not type-check them: the test
 * task runs `deno check tests/` first.
 */

/**
 * How many shards the suite is dealt into (tests/shards/0.ts ... 63.ts; DENO_JOBS of them run at
 * once): ~17 files each. With 16 (~68 files each) the CI runs saw three or four tests with narrow
 * timing windows fail per run that pass file by file (a shard's isolate grown over many files
 * pauses longer, suspected, not measured); a shard costs ~0.45 CPU-s, so many small ones cost little.
 */
export const SHARDS = 64;

const TESTS_DIR = new URL("../", import.meta.url);
const SHARDS_DIR = new URL("./", import.meta.url);
/** The names `deno test` takes as test files when given a folder (its default pattern). */
const TEST_FILE = /(?:^|[._])test\.(?:ts|tsx|mts|js|jsx|mjs)$/;

/** Every test file under tests/ (this folder left out), as file URLs, sorted by path. */
export async function testFiles(): Promise<URL[]> {
  const found: string[] = [];
  const walk = async (dir: URL): Promise<void> => {
    if (dir.href === SHARDS_DIR.href) return;
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(new URL(`${e.name}/`, dir));
      else if (e.isFile && TEST_FILE.test(e.name)) found.push(new URL(e.name, dir).href);
    }
  };
  await walk(TESTS_DIR);
  return found.sort().map((href) => new URL(href));
}

/** The test files of shard `k` (0 <= k < SHARDS): every SHARDS-th of {@link testFiles}. */
export async function shardFiles(k: number): Promise<URL[]> {
  if (!Number.isInteger(k) || k < 0 || k >= SHARDS) {
    throw new RangeError(`shard ${k}: expected an integer from 0 to ${SHARDS - 1}`);
  }
  return (await testFiles()).filter((_, i) => i % SHARDS === k);
}

/**
 * Imports shard `k`'s test files in order, registering their tests (called at a shard's top). A
 * file that throws while imported (a syntax error, a failing top-level await) is a failed test
 * named after it; the shard's other files still run.
 */
export async function runShard(k: number): Promise<void> {
  for (const file of await shardFiles(k)) {
    try {
      await import(file.href);
    } catch (err) {
      const name = file.href.slice(TESTS_DIR.href.length);
      Deno.test(`tests/${name} could not be imported`, () => {
        throw err;
      });
    }
  }
}
