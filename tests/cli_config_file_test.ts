/**
 * The `runtime` command reading its configuration file, as a real child process: bounded reads (a
 * regular file of at most 2 MiB), strict UTF-8 and no secret in any output (README,
 * "Configuration").
 */
import assert from "node:assert/strict";
import { safetySection, withFiles } from "./helpers/cli.ts";
import { MAX_CONFIG_FILE_BYTES } from "../src/config/mod.ts";
import { compiledPermissions } from "./helpers/compiled_permissions.ts";

const MAIN = new URL("../src/main.ts", import.meta.url).pathname;
const VALID = "providers: [{id: p0, command: deno}]\n";
/** Generous bound on one run: a read that blocks or runs away is killed, and the test fails. */
const RUN_TIMEOUT_MS = 30_000;

/** Runs `src/main.ts`; killed after RUN_TIMEOUT_MS (then `timedOut`). */
async function run(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<{ code: number; stdout: string; stderr: string; timedOut: boolean }> {
  const signal = AbortSignal.timeout(RUN_TIMEOUT_MS);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...compiledPermissions(), "--quiet", MAIN, ...args],
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    env: { NO_COLOR: "1", ...opts.env },
    stdout: "piped",
    stderr: "piped",
    signal,
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
    timedOut: signal.aborted,
  };
}

async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(out.code, 0, "mkfifo");
}

for (const flag of ["--check-config", "--config"]) {
  Deno.test(`runtime ${flag} refuses /dev/zero with exit 2 instead of reading it`, async () => {
    const r = await run([flag, "/dev/zero"]);
    assert.ok(!r.timedOut, "did not finish");
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr,
      "runtime: cannot read config file /dev/zero: not a regular file (a character device)\n",
    );
    assert.equal(r.stdout, "");
  });

  Deno.test(`runtime ${flag} refuses a FIFO with no writer with exit 2 instead of blocking`, async () => {
    await withFiles({}, async (dir) => {
      await mkfifo(`${dir}/config.yaml`);
      const r = await run([flag, "config.yaml"], { cwd: dir });
      assert.ok(!r.timedOut, "blocked on the FIFO");
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr,
        "runtime: cannot read config file config.yaml: not a regular file (a FIFO)\n",
      );
    });
  });

  Deno.test(`runtime ${flag} refuses a file one byte over the size limit with exit 2`, async () => {
    // A comment line pads valid YAML to the exact size.
    const over = VALID + "#".repeat(MAX_CONFIG_FILE_BYTES - VALID.length) + "\n";
    assert.equal(over.length, MAX_CONFIG_FILE_BYTES + 1);
    await withFiles({ "big.yaml": over }, async (dir) => {
      const r = await run([flag, "big.yaml"], { cwd: dir });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr,
        `runtime: cannot read config file big.yaml: too large: ${MAX_CONFIG_FILE_BYTES + 1} ` +
          `bytes, the limit is ${MAX_CONFIG_FILE_BYTES} bytes (2 MiB)\n`,
      );
    });
  });

  Deno.test(`runtime ${flag} reports a byte that is not UTF-8 at its line and column`, async () => {
    await withFiles({}, async (dir) => {
      const enc = new TextEncoder();
      await Deno.writeFile(
        `${dir}/latin1.yaml`,
        new Uint8Array([...enc.encode(`${VALID}runtime:\n  name: caf`), 0xe9, 0x0a]),
      );
      const r = await run([flag, "latin1.yaml"], { cwd: dir });
      assert.equal(r.code, 1, r.stderr);
      const out = flag === "--check-config" ? r.stdout : r.stderr;
      assert.match(
        out,
        /^latin1\.yaml:3:12: error: the file is not valid UTF-8: invalid byte at byte offset 57 /,
      );
      assert.ok(!out.includes("\ufffd"));
    });
  });
}

Deno.test("runtime --check-config accepts a file of exactly the size limit", async () => {
  // With a safe state: --check-config's e-stop review stays out of the summary.
  const head = VALID + safetySection();
  const at = head + "#".repeat(MAX_CONFIG_FILE_BYTES - head.length - 1) + "\n";
  assert.equal(at.length, MAX_CONFIG_FILE_BYTES);
  await withFiles({ "at.yaml": at }, async (dir) => {
    const r = await run(["--check-config", "at.yaml"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "at.yaml: 0 errors, 0 warnings\n");
  });
});

const SECRET_YAML = `http:
  auth_token: 12345678901
  auth_tokn: 12345678902
telemetry:
  influxdb:
    token: 12345678903
${VALID}`;

Deno.test("runtime --check-config prints no secret, as text or as JSON", async () => {
  await withFiles({ "s.yaml": SECRET_YAML }, async (dir) => {
    const text = await run(["--check-config", "s.yaml"], { cwd: dir });
    assert.equal(text.code, 1);
    assert.match(text.stdout, /^s\.yaml:2:3: error: http\.auth_token: must be a string/m);
    const json = await run(["--check-config", "s.yaml", "--format", "json"], { cwd: dir });
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout);
    assert.deepEqual(
      report.diagnostics.map((d: { path: string; line: number }) => `${d.path}@${d.line}`),
      ["http.auth_token@2", "http.auth_tokn@3", "telemetry.influxdb.token@6"],
    );
    const start = await run(["--config", "s.yaml"], { cwd: dir });
    assert.equal(start.code, 1);
    for (const out of [text.stdout, text.stderr, json.stdout, start.stdout, start.stderr]) {
      for (const secret of ["12345678901", "12345678902", "12345678903"]) {
        assert.ok(!out.includes(secret), `${secret} printed:\n${out}`);
      }
    }
  });
});

Deno.test("runtime --help and the README state the configuration size limit", async () => {
  const mib = `${MAX_CONFIG_FILE_BYTES / (1024 * 1024)} MiB`;
  const help = await run(["--help"]);
  assert.match(help.stdout, new RegExp(`regular file of at most ${mib}`));
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  assert.match(readme, new RegExp(`at most \\*\\*${mib}\\*\\* \\(\`MAX_CONFIG_FILE_BYTES\``));
});
