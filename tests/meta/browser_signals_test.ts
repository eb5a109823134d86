/**
 * The tests' Chromium is not closed by a signal to the test process: Playwright's launcher closes
 * every browser it launched on SIGTERM, SIGINT and SIGHUP by default, and the shards of the suite
 * run as workers of one process, so one file's signal closed another file's Chromium mid-test
 * ("Target page, context or browser has been closed").
 */
import assert from "node:assert/strict";
import { chromiumMissing } from "../helpers/browser.ts";

const PROGRAM = new URL("../helpers/_chromium_sigterm.ts", import.meta.url).pathname;

Deno.test({
  name: "a Chromium the tests launch stays connected through a SIGTERM to the process",
  ignore: chromiumMissing(),
  async fn() {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", PROGRAM],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `the program failed:\n${stdout}\n${stderr}`);
    assert.deepEqual(JSON.parse(stdout.trim().split("\n").at(-1)!), {
      received: true,
      connected: true,
    });
  },
});
