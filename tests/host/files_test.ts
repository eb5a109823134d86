/** readRegularFile and readFileBytes: bounded reads of a regular file. */
import assert from "node:assert/strict";
import { READ_FILE_MAX_BYTES, readFileBytes, readRegularFile } from "../../src/host/mod.ts";

const FILES_MODULE = new URL("../../src/host/files.ts", import.meta.url).href;
/** How long a child reading with readFileBytes may take before the read counts as blocked. */
const CHILD_READ_BOUND_MS = 10_000;

async function withTempDir(fn: (dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "host-files-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(out.code, 0, "mkfifo");
}

Deno.test("readRegularFile reads a regular file's exact bytes", async () => {
  await withTempDir(async (dir) => {
    const bytes = new Uint8Array([0x61, 0xff, 0x00, 0x0a, 0xe9]);
    await Deno.writeFile(`${dir}/f`, bytes);
    assert.deepEqual(await readRegularFile(`${dir}/f`, 5), { ok: true, bytes });
  });
});

Deno.test("readRegularFile accepts exactly maxBytes and refuses one byte more", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/at`, new Uint8Array(1000).fill(0x23));
    await Deno.writeFile(`${dir}/over`, new Uint8Array(1001).fill(0x23));
    const at = await readRegularFile(`${dir}/at`, 1000);
    assert.ok(at.ok && at.bytes.length === 1000);
    assert.deepEqual(await readRegularFile(`${dir}/over`, 1000), {
      ok: false,
      message: "too large: 1001 bytes, the limit is 1000 bytes",
    });
  });
});

Deno.test("readRegularFile names the limit in MiB when it is a whole number of MiB", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/big`, new Uint8Array(1024 * 1024 + 1));
    assert.deepEqual(await readRegularFile(`${dir}/big`, 1024 * 1024), {
      ok: false,
      message: "too large: 1048577 bytes, the limit is 1048576 bytes (1 MiB)",
    });
  });
});

Deno.test("readRegularFile reads at most maxBytes + 1 bytes whatever stat says", async () => {
  // /proc files are regular files whose stat size is 0 while they hold more: the bound must hold
  // on what is read, not on what stat promised (a file that grows after the check is the same).
  const whole = await readRegularFile("/proc/self/status", 1_000_000);
  assert.ok(whole.ok && whole.bytes.length > 100, "read past the stat size of 0");
  assert.deepEqual(await readRegularFile("/proc/self/status", 100), {
    ok: false,
    message: "too large: it grew past the limit of 100 bytes while being read",
  });
});

Deno.test("readRegularFile refuses a character device without reading it", async () => {
  assert.deepEqual(await readRegularFile("/dev/zero", 1000), {
    ok: false,
    message: "not a regular file (a character device)",
  });
});

Deno.test("readRegularFile refuses a directory and a missing file", async () => {
  await withTempDir(async (dir) => {
    assert.deepEqual(await readRegularFile(dir, 1000), {
      ok: false,
      message: "not a regular file (a directory)",
    });
    assert.deepEqual(await readRegularFile(`${dir}/missing`, 1000), {
      ok: false,
      message: "no such file",
    });
  });
});

Deno.test("readRegularFile refuses a FIFO with no writer at once instead of blocking", async () => {
  await withTempDir(async (dir) => {
    const fifo = `${dir}/fifo`;
    await mkfifo(fifo);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const blocked = new Promise<"blocked">((resolve) => {
      timer = setTimeout(() => resolve("blocked"), 5000);
    });
    const outcome = await Promise.race([readRegularFile(fifo, 1000), blocked]);
    clearTimeout(timer);
    if (outcome === "blocked") {
      // Release the stuck open (a writer unblocks it) so the test ends, then fail.
      (await Deno.open(fifo, { write: true })).close();
      assert.fail("readRegularFile blocked on a FIFO");
    }
    assert.deepEqual(outcome, { ok: false, message: "not a regular file (a FIFO)" });
  });
});

/**
 * readFileBytes(path) in a child process (a read that blocks would block this test's thread too):
 * "read N" bytes, "refused: <message>", or "blocked" when the child had not answered within
 * CHILD_READ_BOUND_MS (then it is killed).
 */
async function readFileBytesInChild(path: string): Promise<string> {
  const code = `import { readFileBytes } from ${JSON.stringify(FILES_MODULE)};
try { console.log("read " + readFileBytes(${JSON.stringify(path)}).length); }
catch (e) { console.log("refused: " + e.message); }`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", code],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), CHILD_READ_BOUND_MS);
  const out = await child.output();
  clearTimeout(timer);
  return out.signal === "SIGKILL" ? "blocked" : new TextDecoder().decode(out.stdout).trim();
}

Deno.test("readFileBytes reads a regular file's exact bytes, up to exactly maxBytes", async () => {
  await withTempDir(async (dir) => {
    const bytes = new Uint8Array([0x61, 0xff, 0x00, 0x0a, 0xe9]);
    await Deno.writeFile(`${dir}/f`, bytes);
    assert.deepEqual(readFileBytes(`${dir}/f`), bytes);
    assert.deepEqual(readFileBytes(`${dir}/f`, 5), bytes);
  });
});

Deno.test("readFileBytes refuses a file over its bound, READ_FILE_MAX_BYTES by default", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/over`, new Uint8Array(1001).fill(0x23));
    assert.throws(() => readFileBytes(`${dir}/over`, 1000), {
      message: "too large: 1001 bytes, the limit is 1000 bytes",
    });
    // A sparse file one byte over the default bound: refused from its size, before any read.
    using f = await Deno.open(`${dir}/big`, { write: true, create: true });
    await f.truncate(READ_FILE_MAX_BYTES + 1);
    assert.throws(() => readFileBytes(`${dir}/big`), {
      message: `too large: ${READ_FILE_MAX_BYTES + 1} bytes, the limit is ${READ_FILE_MAX_BYTES} ` +
        `bytes (${READ_FILE_MAX_BYTES / (1024 * 1024)} MiB)`,
    });
    // /proc files say 0 bytes: the bound holds on what is read.
    assert.throws(() => readFileBytes("/proc/self/status", 100), {
      message: "too large: it grew past the limit of 100 bytes while being read",
    });
  });
});

Deno.test("readFileBytes refuses a directory and a missing file", async () => {
  await withTempDir((dir) => {
    assert.throws(() => readFileBytes(dir), { message: "not a regular file (a directory)" });
    assert.throws(() => readFileBytes(`${dir}/missing`), Deno.errors.NotFound);
  });
});

Deno.test("readFileBytes refuses a FIFO with no writer and a character device instead of blocking", async () => {
  await withTempDir(async (dir) => {
    await mkfifo(`${dir}/fifo`);
    assert.equal(await readFileBytesInChild(`${dir}/fifo`), "refused: not a regular file (a FIFO)");
    assert.equal(
      await readFileBytesInChild("/dev/zero"),
      "refused: not a regular file (a character device)",
    );
  });
});
