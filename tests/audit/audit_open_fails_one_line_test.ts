/**
 * An audit folder the runtime cannot use at start-up (here `<data_dir>/audit` is a file) is one
 * cause: the kernel's start says it in one ERROR, naming the folder and the error -- not a second
 * "audit journal not searched for interrupted calls" ERROR for the same cause. The writes after it
 * (the mode change's entry) follow the writer's failing spell: no line of their own, while the
 * journal shows as failing. The kernel with the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { startRuntime, tempDir } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel start with <data_dir>/audit a file logs one ERROR naming the folder and the error, and the entries after it add none", async () => {
  const dir = tempDir("audit-open-fails-");
  await Deno.writeTextFile(`${dir}/audit`, "not a folder\n");
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(testConfig({ runtime: { dataDir: dir } }), { host: { log } });
  try {
    const atStart = lines.filter((l) => l.startsWith("ERROR") && /audit/.test(l));
    assert.equal(atStart.length, 1, lines.join("\n"));
    assert.ok(atStart[0]!.includes(`${dir}/audit`), `names the folder: ${atStart[0]}`);
    assert.match(atStart[0]!, /: File exists \(os error 17\)/, "names the error");
    assert.match(atStart[0]!, /interrupted calls not searched for/, "says what else it means");
    assert.equal(rt.audit.status().journal, "failing");
    // A later entry (the mode change is audited) fails to be written too: the same spell.
    await rt.modes.request("MANUAL");
    await rt.audit.query({ limit: 10 });
    assert.equal(rt.audit.status().journal, "failing");
    const all = lines.filter((l) => l.startsWith("ERROR") && /audit/.test(l));
    assert.equal(all.length, 1, lines.join("\n"));
  } finally {
    await rt.stop();
  }
});
