/**
 * A SIGHUP arriving while the runtime stops (after SIGTERM): no configuration reload is started
 * or said to be, and no ERROR line follows it -- the stop is what the operator asked for.
 */
import assert from "node:assert/strict";
import { SIM_MAIN, SIM_YAML } from "../helpers/sim_config.ts";
import { sparkplugRuntimeYaml } from "../helpers/sparkplug_host.ts";
import {
  freePort,
  providerYaml,
  scriptedCommand,
  startRuntimeOnFreePort,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

Deno.test("SIGHUP during the stop: not reloaded, said at INFO, no ERROR; the stop ends as usual (exit 0)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-sighup-stop-" });
  // The provider's process lingers past its stdin's close: the stop waits for it (up to
  // shutdown_timeout_ms), which leaves the SIGHUP time to arrive during the stop.
  const scripted = scriptedCommand([]);
  const cmd = [scripted.command, ...scripted.args].map((a) => `'${a}'`).join(" ");
  const lingering = { command: "sh", args: ["-c", `${cmd}; exec sleep 1.5`] };
  const { rt } = await startRuntimeOnFreePort((port) =>
    writeRuntimeConfig(dir, {
      port,
      runtime: "  shutdown_timeout_ms: 5000\n",
      providers: providerYaml("p0", lingering),
    })
  );
  try {
    await rt.stderrLine(/Runtime Ready/);
    rt.child.kill("SIGTERM");
    await rt.stderrLine(/SIGTERM received: shutting down/);
    rt.child.kill("SIGHUP");
    await rt.stderrLine(/SIGHUP/);
    const exit = await within(rt.exit, 30000);
    if (exit === "timeout") assert.fail("the stop must end");
    const lines = exit.stderr.split("\n");
    const sighup = lines.filter((l) => l.includes("SIGHUP"));
    // Before: "INFO SIGHUP received: reloading the configuration", then "ERROR config reload
    // failed: reload refused: the runtime is stopping".
    assert.equal(sighup.length, 1, exit.stderr);
    assert.match(sighup[0]!, /^INFO .*SIGHUP received while stopping: configuration not reloaded$/);
    assert.deepEqual(lines.filter((l) => /^ERROR|config reload/.test(l)), [], exit.stderr);
    assert.equal(exit.code, 0, exit.stderr);
  } finally {
    await rt.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "SIGHUP during start-up, then SIGTERM while the Sparkplug edge node starts: not reloaded, no ERROR (exit 0)",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-sighup-start-stop-" });
    // The bdSeq save's temporary file is a FIFO nobody reads: the edge node's start waits in it
    // (BDSEQ_SAVE_WAIT_MS) after the API is served, until the stop ends that wait -- and start-up
    // then finishes after the stop began.
    await Deno.mkdir(`${dir}/data/sparkplug`, { recursive: true });
    const made = await new Deno.Command("mkfifo", { args: [`${dir}/data/sparkplug/bdseq.tmp`] })
      .output();
    assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
    const { rt } = await startRuntimeOnFreePort(async (port) => {
      const path = `${dir}/runtime.yaml`;
      await Deno.writeTextFile(
        path,
        sparkplugRuntimeYaml({
          dir,
          port,
          node: "proc",
          group: "lab",
          // Nothing listens there: the node connects in the background, and never gets that far.
          brokerUrl: `mqtt://127.0.0.1:${freePort()}`,
          simArgs: `run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}`,
        }),
      );
      return path;
    });
    try {
      await rt.stderrLine(/API listening/);
      rt.child.kill("SIGHUP");
      await rt.stderrLine(/SIGHUP received during start-up/);
      rt.child.kill("SIGTERM");
      await rt.stderrLine(/SIGTERM received during start-up: stopping/);
      const exit = await within(rt.exit, 30000);
      if (exit === "timeout") assert.fail("the stop must end");
      const lines = exit.stderr.split("\n");
      // Before: the reload the SIGHUP waited for ran once start-up finished, the stop under way:
      // "ERROR config reload failed: reload refused: the runtime is stopping".
      assert.deepEqual(lines.filter((l) => /^ERROR|config reload/.test(l)), [], exit.stderr);
      // One INFO: the stop was asked (start-up stopped by it, or finished as it came), no WARN.
      assert.deepEqual(
        lines.filter((l) => /SIGHUP .*configuration not reloaded/.test(l)).map((l) =>
          l.split(" ")[0]
        ),
        ["INFO"],
        exit.stderr,
      );
      assert.equal(exit.code, 0, exit.stderr);
    } finally {
      await rt.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
