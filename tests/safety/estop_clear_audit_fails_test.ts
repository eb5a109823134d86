/**
 * A reset permits whatever else is failing, its audit sink included: the release is an operator's
 * deliberate act, so an audit sink that throws on the release's entry must neither leave the
 * runtime unreleasable (clear() threw, the latch unchanged) nor let the release go unsaid. It is
 * contained as the latch's entry is: one ERROR line saying the release's audit entry is lost, and
 * the release goes on -- in force, logged and announced (`estop_change` latched false). In-process:
 * the real Estop over a router that answers every call at once, a modes port that records FAULT,
 * and an audit sink whose record() throws on the release's entry (`estop_clear`).
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { containedEstop } from "./_clock_rig.ts";

Deno.test("Estop.clear releases the latch and announces it when the audit sink throws on its entry: one ERROR line, its entry lost", async () => {
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  const bus = new EventBus();
  const releases: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && !event.latched) releases.push(event);
  });
  const audited: AuditDecision[] = [];
  const offered: AuditDecision[] = [];
  const estop = containedEstop({
    log,
    bus,
    audit: {
      record: (d) => {
        if (d.action !== "estop_clear") return void audited.push(d);
        offered.push(d);
        throw new Error("audit broke");
      },
    },
  });
  await estop.trigger("latched for the test");
  assert.equal(estop.status().latched, true);
  assert.equal(audited.filter((d) => d.action === "estop").length, 1, "the latch's entry");

  let answer: unknown;
  assert.doesNotThrow(() => (answer = estop.clear()), "clear() returns");
  assert.deepEqual(answer, { latched: false });
  assert.equal(estop.status().latched, false, "the release is in force");
  assert.equal(estop.latched, false);
  assert.equal(offered.length, 1, "its entry was offered to the audit");
  assert.equal(releases.length, 1, "the release was announced");
  const errors = lines.filter((l) => l.startsWith("ERROR"));
  assert.equal(errors.length, 1, `one ERROR line:\n${lines.join("\n")}`);
  assert.match(
    errors[0]!,
    /^ERROR .*e-stop: auditing the release failed: audit broke; its audit entry is lost \(the release goes on\)$/,
  );
  assert.equal(
    lines.filter((l) => /^WARN .*E-stop latch cleared/.test(l)).length,
    1,
    `the release is logged:\n${lines.join("\n")}`,
  );

  // Pressed again: the latch and its stop run as usual, the next release is offered too.
  await estop.trigger("again");
  assert.equal(estop.status().latched, true, "latched again");
  estop.clear();
  assert.equal(estop.status().latched, false, "released again");
  assert.equal(offered.length, 2, "the second release's entry was offered");
  assert.equal(releases.length, 2, "announced");
});
