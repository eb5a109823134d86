/**
 * SpellLog: once per failing spell, then one line when it works again (src/common/spell_log.ts),
 * with a real LineLogger whose lines the test keeps.
 */
import assert from "node:assert/strict";
import { SpellLog } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

/** The lines without their timestamp: `LEVEL text`. */
function levelled(lines: readonly string[]): string[] {
  return lines.map((l) => l.replace(/^(\w+)\s+\S+\s+/, "$1 "));
}

Deno.test("SpellLog logs a spell's first failure with its note, counts the rest and ends it with one recovery line naming how many failed", () => {
  const { log, lines } = capturingLogger({ level: "debug" });
  const spell = new SpellLog({
    log,
    firstNote: "said again once it works",
    recovered: (failed, detail) => `saved again: ${detail} (${failed} failed before)`,
  });
  assert.equal(spell.ok("x0"), 0); // no spell: nothing said
  assert.deepEqual(lines, []);
  for (let i = 1; i <= 3; i++) spell.fail(`save ${i} failed (disk full)`);
  assert.equal(spell.failures, 3);
  assert.deepEqual(levelled(lines), ["WARN save 1 failed (disk full); said again once it works"]);
  assert.equal(spell.ok("x4"), 3);
  assert.equal(spell.failures, 0);
  assert.equal(spell.ok("x5"), 0); // said once per spell
  assert.deepEqual(levelled(lines).slice(1), ["INFO saved again: x4 (3 failed before)"]);

  // A new spell is said again.
  spell.fail("save 6 failed (read-only)");
  assert.equal(spell.failures, 1);
  assert.deepEqual(levelled(lines).slice(2), [
    "WARN save 6 failed (read-only); said again once it works",
  ]);
  assert.equal(spell.ok("x7"), 1);
  assert.deepEqual(levelled(lines).slice(3), ["INFO saved again: x7 (1 failed before)"]);
  assert.equal(lines.length, 4);
});

Deno.test("SpellLog: levels as given, the rest of a spell at DEBUG when asked, and no recovery line without `recovered`", () => {
  const { log, lines } = capturingLogger({ level: "debug" });
  const spell = new SpellLog({
    log,
    failLevel: "error",
    restLevel: "debug",
    recovered: (failed) => `back (${failed})`,
    recoveredLevel: "warn",
  });
  spell.fail("a");
  spell.fail("b");
  spell.ok();
  assert.deepEqual(levelled(lines), ["ERROR a", "DEBUG b", "WARN back (2)"]);

  const quiet = capturingLogger({ level: "debug" });
  const silent = new SpellLog({ log: quiet.log });
  silent.fail("c");
  silent.fail("d");
  assert.equal(silent.ok(), 2);
  silent.fail("e");
  assert.deepEqual(levelled(quiet.lines), ["WARN c", "WARN e"]);
});
