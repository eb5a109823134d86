/**
 * The reload summary line names the providers it lists (retried, updated in place, failed to
 * start, not started) by their configured ids cut as namedProviderId: a provider id is any length
 * (the config bounds it not), and a 10 kB one makes no 10 kB line.
 */
import assert from "node:assert/strict";
import { summarize } from "../../src/app/reloader.ts";
import { type ReloadReport, startedReloadReport } from "../../src/app/reload_report.ts";
import { QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";

const LONG = "p".repeat(10_000);
const CUT = `${"p".repeat(QUOTED_PROVIDER_ID_CHARS)}\u2026`;
/** An id holding ": ", as a failed start's `id: why` separates them. */
const COLON = `a: b${"q".repeat(10_000)}`;
const COLON_CUT = `${COLON.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;

/** A reload that applied the providers section (or was cut short in it: `interrupted`). */
function report(
  providers: Partial<ReloadReport["providers"]>,
  interrupted = false,
): ReloadReport {
  const started = startedReloadReport([], []);
  return {
    ...started,
    providers: { ...started.providers, ...providers },
    applied: ["providers"],
    interrupted,
  };
}

Deno.test("summarize names retried, updated and failed providers by their ids cut", () => {
  const line = summarize(report({
    retried: [LONG],
    updated: [{ id: `u${LONG}`, fields: ["restart_policy"] }],
    failed: [
      { id: COLON, why: "spawn failed: no such file" },
      { id: `x${LONG}`, why: "handshake timed out" },
    ],
    addFailed: [COLON],
    restartFailed: [`x${LONG}`],
  }));
  assert.equal(
    line,
    `config reload: providers +1 -0 ~1 =0; providers retried (circuit open): ${CUT}; ` +
      `providers updated in place: u${CUT.slice(1)} (restart_policy); failed to start: ` +
      `${COLON_CUT}: spawn failed: no such file; x${CUT.slice(1)}: handshake timed out`,
  );
});

Deno.test("summarize of a reload cut short names the providers it did not start by their ids cut", () => {
  const line = summarize(
    report({
      failed: [{ id: LONG, why: "the runtime is stopping" }],
      addFailed: [LONG],
    }, true),
  );
  assert.equal(
    line,
    `config reload interrupted (the runtime is stopping): providers +1 -0 ~0 =0; ` +
      `not started: ${CUT}`,
  );
});

Deno.test('summarize names a provider that failed its retry, its id holding ": ", by the id the report carries, cut', () => {
  // A retried provider (its circuit was open) is in no list of ids but `failed`: its id is the
  // one carried there (the text before the first ": " would leave the rest uncut).
  const line = summarize(report({
    unchanged: ["sim0"],
    failed: [{ id: COLON, why: "not up: handshake timed out" }],
  }));
  assert.equal(
    line,
    `config reload: providers +0 -0 ~0 =1; failed to start: ${COLON_CUT}: not up: handshake timed out`,
  );
});
