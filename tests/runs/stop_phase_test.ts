/**
 * The run registry's stop as one phase (src/runs/_stop_phase.ts): every step from every phase,
 * as a table. A step never moves the stop back (a second shutdown() finds it further on), and a
 * step the stop cannot take where it is (its turn, or its last save, before it was asked) throws.
 */
import assert from "node:assert/strict";
import {
  STOP_RUNNING,
  type StopPhase,
  stopPhaseAfter,
  type StopStep,
} from "../../src/runs/_stop_phase.ts";

const asked: StopPhase = { kind: "asked" };
const saving: StopPhase = { kind: "saving" };
const savedAtStop: StopPhase = { kind: "saved", lostWhy: "noted after the stop's last save" };
const ask: StopStep = { kind: "ask" };
const turn: StopStep = { kind: "turn" };
const lastSave = (lostWhy: string): StopStep => ({ kind: "lastSave", lostWhy });

/** [from, step, to: the phase after it, or "throws"]. */
const TRANSITIONS: [StopPhase, StopStep, StopPhase | "throws"][] = [
  [STOP_RUNNING, ask, asked],
  [STOP_RUNNING, turn, "throws"],
  [STOP_RUNNING, lastSave("x"), "throws"],
  [asked, ask, asked],
  [asked, turn, saving],
  [asked, lastSave("x"), "throws"],
  [saving, ask, saving],
  [saving, turn, saving],
  [saving, lastSave("run registry stopped before its start"), {
    kind: "saved",
    lostWhy: "run registry stopped before its start",
  }],
  [savedAtStop, ask, savedAtStop],
  [savedAtStop, turn, savedAtStop],
  // A second shutdown()'s own last save gives the reason it says.
  [savedAtStop, lastSave("run registry stopped"), {
    kind: "saved",
    lostWhy: "run registry stopped",
  }],
];

Deno.test("stopPhaseAfter moves the run registry's stop on as its table says, from every phase by every step", () => {
  for (const [from, step, to] of TRANSITIONS) {
    const what = `${step.kind} in ${JSON.stringify(from)}`;
    if (to === "throws") {
      assert.throws(
        () => stopPhaseAfter(from, step),
        new RegExp(`run registry stop: step '${step.kind}' in phase '${from.kind}'`),
        what,
      );
    } else {
      assert.deepEqual(stopPhaseAfter(from, step), to, what);
    }
  }
});

Deno.test("stopPhaseAfter's table covers every phase with every step", () => {
  const kinds = (xs: { kind: string }[]) => [...new Set(xs.map((x) => x.kind))].sort();
  const phases = ["asked", "running", "saved", "saving"];
  const steps = ["ask", "lastSave", "turn"];
  assert.deepEqual(kinds(TRANSITIONS.map(([from]) => from)), phases);
  for (const phase of phases) {
    const of = TRANSITIONS.filter(([from]) => from.kind === phase);
    assert.deepEqual(kinds(of.map(([, step]) => step)), steps, `the steps from ${phase}`);
  }
});
