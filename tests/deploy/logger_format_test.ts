/**
 * Log lines fit journald and terminals: `<N>` syslog priority prefix and no timestamp when
 * JOURNAL_STREAM is set (journald stamps every line itself), `LEVEL timestamp [scope] message`
 * otherwise, always one line per event.
 */
import assert from "node:assert/strict";
import type { LogLevel } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { repoPath } from "./_helpers.ts";
import { compiledEnvPermissions } from "../helpers/compiled_permissions.ts";

const NOW = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
const STAMP = "2025-01-02T03:04:05.678Z";

function capture(journald: boolean, level: LogLevel = "debug") {
  return capturingLogger({ level, journald, now: () => NOW });
}

Deno.test("LineLogger in journald mode prefixes the syslog priority and omits the timestamp", () => {
  const { log, lines } = capture(true);
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
  assert.deepEqual(lines, ["<7>d", "<6>i", "<4>w", "<3>e"]);
  for (const line of lines) assert.ok(!line.includes("2025-"), line);
});

Deno.test("LineLogger in journald mode keeps the scope after the priority prefix", () => {
  const { log, lines } = capture(true);
  log.child("provider").child("sim0").warn("restarting");
  assert.deepEqual(lines, ["<4>[provider/sim0] restarting"]);
});

Deno.test("LineLogger in plain mode writes level, ISO timestamp, scope and message", () => {
  const { log, lines } = capture(false);
  log.info("up");
  log.child("http").error("bind failed");
  assert.deepEqual(lines, [`INFO  ${STAMP} up`, `ERROR ${STAMP} [http] bind failed`]);
});

Deno.test("LineLogger writes one line per event and escapes newlines and control characters", () => {
  for (const journald of [true, false]) {
    const { log, lines } = capture(journald);
    log.warn("a\nb\r\nc\rd\x1b[31me\tf");
    assert.equal(lines.length, 1);
    // deno-lint-ignore no-control-regex
    assert.ok(!/[\n\r\x1b]/.test(lines[0]!), JSON.stringify(lines[0]));
    assert.ok(lines[0]!.endsWith("a\\nb\\nc\\x0dd\\x1b[31me\tf"), JSON.stringify(lines[0]));
  }
});

Deno.test("LineLogger drops events below its level", () => {
  const { log, lines } = capture(true, "warn");
  log.debug("no");
  log.info("no");
  log.warn("yes");
  log.error("yes");
  assert.deepEqual(lines, ["<4>yes", "<3>yes"]);
});

/** Runs the real stderr logger in a child with the single binary's env permissions. */
async function childLogLines(journalStream: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...compiledEnvPermissions(),
      repoPath("tests/deploy/_log_child.ts"),
    ],
    // An empty value counts as unset; it also hides a JOURNAL_STREAM the test runner may have.
    env: { JOURNAL_STREAM: journalStream },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.equal(new TextDecoder().decode(out.stdout), "", "logs go to stderr only");
  return stderr.split("\n").filter((l) => l !== "");
}

Deno.test("createStderrLogger writes journald lines when JOURNAL_STREAM is set", async () => {
  const lines = await childLogLines("8:123456");
  assert.deepEqual(lines, [
    "<7>event one",
    "<6>[http] event two",
    "<4>[provider/sim0] event three\\nsecond line\\nthird line",
    "<3>event four",
  ]);
});

Deno.test("createStderrLogger writes plain timestamped lines without JOURNAL_STREAM", async () => {
  const lines = await childLogLines("");
  const re =
    /^(DEBUG|INFO |WARN |ERROR) \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (\[[a-z0-9/]+\] )?event /;
  assert.equal(lines.length, 4, lines.join("\n"));
  for (const line of lines) assert.match(line, re);
  assert.ok(lines[2]!.startsWith("WARN "));
  assert.ok(lines[2]!.endsWith("[provider/sim0] event three\\nsecond line\\nthird line"), lines[2]);
});
