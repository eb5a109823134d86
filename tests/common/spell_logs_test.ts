/**
 * SpellLogs: a SpellLog per key, made at the key's first failure with its own options, ended one
 * by one or all at once (src/common/spell_log.ts), with a real LineLogger whose lines the test
 * keeps.
 */
import assert from "node:assert/strict";
import { SpellLogs } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

/** The lines without their timestamp: `LEVEL text`. */
function levelled(lines: readonly string[]): string[] {
  return lines.map((l) => l.replace(/^(\w+)\s+\S+\s+/, "$1 "));
}

Deno.test("SpellLogs keeps one spell per key, worded for its key, and ends one or every spell with its count", () => {
  const { log, lines } = capturingLogger({ level: "debug" });
  const made: string[] = [];
  const spells = new SpellLogs((key) => {
    made.push(key);
    return {
      log,
      firstNote: `the rest of ${key}'s at DEBUG`,
      restLevel: "debug",
      recovered: (n) => `${key}: ${n} run(s)`,
    };
  });
  spells.end("a"); // no spell: nothing said
  spells.fail("a", "a ran");
  spells.fail("b", "b ran");
  spells.fail("a", "a ran again");
  assert.deepEqual(made, ["a", "b"]);
  assert.deepEqual(levelled(lines), [
    "WARN a ran; the rest of a's at DEBUG",
    "WARN b ran; the rest of b's at DEBUG",
    "DEBUG a ran again",
  ]);
  spells.end("a");
  spells.end("a"); // ended once
  assert.deepEqual(levelled(lines).slice(3), ["INFO a: 2 run(s)"]);
  // A key's next spell is a new one, its options asked again.
  spells.fail("a", "a ran once more");
  assert.deepEqual(made, ["a", "b", "a"]);
  spells.endAll();
  assert.deepEqual(levelled(lines).slice(4), [
    "WARN a ran once more; the rest of a's at DEBUG",
    "INFO b: 1 run(s)",
    "INFO a: 1 run(s)",
  ]);
  spells.endAll(); // every spell ended already: nothing said
  assert.equal(lines.length, 7);
});
