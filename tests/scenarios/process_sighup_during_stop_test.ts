/**
 * A SIGHUP arriving while the runtime stops (after SIGTERM): no configuration reload is started
 * or said to be, and no ERROR line follows it -- the stop is what the operator asked for.
 */
import assert from "node:assert/strict";
import {
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
