/**
 * A reload asks its file-system questions off the event loop's thread, each within
 * RELOAD_FILE_READ_TIMEOUT_MS; one that does not answer is abandoned, but the stat or read itself
 * holds one of Deno's blocking worker threads (32 in all, the journals' writes' too) until the
 * kernel returns. Repeated SIGHUPs on a hung mount each abandoned more, without end. Once
 * RELOAD_ABANDONED_READS_MAX are left waiting, a reload asks nothing: it is refused at once,
 * naming the paths that still hang, the configuration in force kept; one that finally returns
 * frees its place. Real files but for the hung stats (held by the test), the reload's bound on a
 * clock moved by hand.
 */
import assert from "node:assert/strict";
import {
  AbandonedReloadReads,
  RELOAD_ABANDONED_READS_MAX,
  RELOAD_FILE_READ_TIMEOUT_MS,
  type ReloadedConfig,
} from "../src/app/mod.ts";
import { commandOnPath, type PathStat, readRegularFile, statPath } from "../src/host/mod.ts";
import { configReload, type ReloadPorts } from "../src/main.ts";
import { ManualClock } from "./helpers/clock.ts";
import { tempDir, waitFor } from "./helpers/kernel.ts";

const NO_ANSWER =
  `no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing disk?)`;

Deno.test("reloads on a hung mount leave at most RELOAD_ABANDONED_READS_MAX stats waiting: the next reload asks nothing and is refused at once naming the paths that hang, and a stat that returns frees its place", async () => {
  const dir = tempDir("runtime-reload-abandoned-");
  const file = `${dir}/runtime.yaml`;
  const clock = new ManualClock();
  /** The stats on the hung mount, each answered only when the test says. */
  const hung: { path: string; answer: (stat: PathStat) => void }[] = [];
  let reads = 0;
  const abandoned = new AbandonedReloadReads();
  const ports: ReloadPorts = {
    clock,
    readRegularFile: (path, maxBytes) => {
      reads++;
      return readRegularFile(path, maxBytes);
    },
    stat: (path) => {
      if (!path.includes("/nfs")) return statPath(path);
      return new Promise((answer) => hung.push({ path, answer }));
    },
    commandOnPath,
    abandoned,
  };
  const reload = configReload(
    file,
    { file, logLevel: null },
    { port: null, logLevel: null },
    { logLevel: "info", automationEnabled: false },
    ports,
  );
  // The file names a provider command on the hung mount: one of five folders by turn.
  const command = (i: number) => `${dir}/nfs${i % 5}/bin/sim`;
  const hungReload = async (i: number): Promise<ReloadedConfig> => {
    await Deno.writeTextFile(
      file,
      `runtime:\n  name: rig\nproviders:\n  - id: sim0\n    command: ${command(i)}\n`,
    );
    const stats = hung.length;
    const reloading = reload();
    await waitFor(`reload ${i + 1}'s stat of ${command(i)}`, () => hung.length > stats);
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    return await reloading;
  };
  for (let i = 0; i < RELOAD_ABANDONED_READS_MAX; i++) {
    assert.deepEqual(await hungReload(i), {
      ok: false,
      errors: [
        `${file}:5:5: error: providers[0].command: cannot check ${
          JSON.stringify(command(i))
        }: ${NO_ANSWER}`,
      ],
      warnings: [],
    });
  }

  // The next reload: nothing asked, not even the file read; refused without the clock moving.
  const refusedOnce = async (): Promise<ReloadedConfig> => {
    const readsBefore = reads;
    const statsBefore = hung.length;
    let result: ReloadedConfig | undefined;
    void reload().then((r) => (result = r));
    await waitFor(
      "the reload to end or ask",
      () => result !== undefined || reads > readsBefore || hung.length > statsBefore,
    );
    assert.equal(reads, readsBefore, "the configuration file is not read");
    assert.equal(hung.length, statsBefore, "no path is asked about");
    return result!;
  };
  // Eight stats left waiting on five paths: the first three named with their counts.
  const refusal = `reload refused: ${RELOAD_ABANDONED_READS_MAX} file-system read(s) that ` +
    `reloads left waiting still hang, on ${command(0)} (2), ${command(1)} (2), ${
      command(2)
    } (2) and 2 more ` +
    "path(s): no reload asks the file system until one returns (at most " +
    `${RELOAD_ABANDONED_READS_MAX} are left waiting, each holding a worker thread)`;
  assert.deepEqual(await refusedOnce(), { ok: false, errors: [refusal] });
  assert.equal(abandoned.count, RELOAD_ABANDONED_READS_MAX);

  // One stat on the mount finally returns: its place is free, and the next reload asks again.
  hung[3]!.answer({ kind: "none" });
  await waitFor(
    "the returned stat's place freed",
    () => abandoned.count < RELOAD_ABANDONED_READS_MAX,
  );
  assert.equal(abandoned.count, RELOAD_ABANDONED_READS_MAX - 1);
  const i = RELOAD_ABANDONED_READS_MAX;
  assert.deepEqual((await hungReload(i)).ok, false);
  assert.equal(abandoned.count, RELOAD_ABANDONED_READS_MAX, "left waiting again");
  assert.deepEqual((await refusedOnce()).ok, false);

  // Every stat returns: the reload asks and is answered (a command on PATH this time).
  for (const h of hung) h.answer({ kind: "none" });
  await waitFor("every place freed", () => abandoned.count === 0);
  await Deno.writeTextFile(
    file,
    `runtime:\n  name: rig\nproviders:\n  - id: sim0\n    command: deno\n`,
  );
  const applied = await reload();
  assert.equal(applied.ok, true, JSON.stringify(applied));
});
