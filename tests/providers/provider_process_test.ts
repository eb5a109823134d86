import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import {
  ProviderRegistry,
  ProviderSession,
  STDERR_LINES_PER_SECOND,
} from "../../src/providers/mod.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

Deno.test("ProviderSession logs provider stderr line by line with the provider id, rate-limited", async () => {
  const lines: string[] = [];
  const cfg = {
    ...simProvider("noisy"),
    command: "sh",
    args: ["-c", 'for i in $(seq 1 100); do echo "line $i" >&2; done; exec cat'],
  };
  // The one-second window runs on a clock that stands still until the test moves it.
  const clock = new ManualClock();
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("noisy"),
    clock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("every stderr line read", () => session.stderrTail.at(-1) === "line 100", 5000);
    assert.deepEqual(lines.filter((l) => /suppressed/.test(l)), [], "said when the window closes");
    clock.advance(1000);
    const logged = lines.filter((l) => l.includes("stderr: line "));
    assert.equal(logged.length, STDERR_LINES_PER_SECOND);
    assert.match(logged[0]!, /^INFO .* \[noisy\] stderr: line 1$/);
    assert.ok(lines.some((l) => /^WARN .*\[noisy\] 80 stderr lines suppressed/.test(l)));
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderRegistry.startAll is bounded by the start-up timeout and leaves nothing running", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-startup-" });
  const script = `${dir}/silent.sh`;
  await Deno.writeTextFile(script, `#!/bin/sh\necho $$ > "${dir}/pid"\nexec sleep 600\n`);
  await Deno.chmod(script, 0o755);
  const silent = { ...simProvider("silent"), command: script, args: [], helloTimeoutMs: 60000 };
  const registry = new ProviderRegistry([simProvider("sim0"), silent], {
    spawn: spawnProcess,
    clock: systemClock,
    log: capturingLogger({ now: () => 0 }).log,
    bus: new EventBus(),
    cwd: dir,
    shutdownTimeoutMs: 1000,
  });
  try {
    await assert.rejects(registry.startAll(1500, 1000), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "DEADLINE_EXCEEDED");
      // sim0 too when a loaded machine kept its handshake past the bound (named with its line).
      assert.match(e.message, /startup_timeout_ms \(1500 ms\): (sim0 \(.*\), )?silent$/);
      return true;
    });
    const pid = Number(await Deno.readTextFile(`${dir}/pid`));
    await waitFor("silent provider ended", () => !processAlive(pid), 5000);
    assert.equal(registry.host("sim0")!.available, false, "the healthy provider was stopped too");
  } finally {
    await registry.stopAll(1000);
    await Deno.remove(dir, { recursive: true });
  }
});
