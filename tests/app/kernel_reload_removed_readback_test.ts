/**
 * A reload that removes a provider while the e-stop reads its safe state back: the read-back's
 * next read answers that the provider is gone (its id no longer configured), not down. It ends at
 * once, its checks saying why -- not read on until verify_timeout_ms -- and never verified.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, expectation } from "../safety/_fixture.ts";
import { readbackProvider } from "../safety/_readback.ts";

/** Far beyond the test's wait below: only the removal can end the read-back in time. */
const VERIFY_TIMEOUT_MS = 20_000;

/** How long the read-back may take to end once the reload is done (well under the timeout). */
const ENDS_WITHIN_MS = 5000;

Deno.test("a read-back of a provider a reload removed ends at once: unreachable, 'provider removed by a configuration reload'", async () => {
  const logFile = await Deno.makeTempFile({ prefix: "kernel-reload-removed-readback-" });
  const r = await rig({
    programs: false,
    providers: [
      readbackProvider("rb", {
        // Every read fails: the read-back reads on until its timeout, or the removal.
        dev0: { signals: { out: "bool" }, reads: [], then: "fail", actuate: "ok" },
      }, { logFile }),
      readbackProvider("kept", {
        dev1: { signals: { out: "bool" }, reads: [{ out: { v: false } }], actuate: "ok" },
      }),
    ],
    safety: {
      hooks: [call("rb/dev0", "set_output")],
      expect: [
        expectation("rb/dev0/out", { equals: false }),
        expectation("kept/dev1/out", { equals: false }),
      ],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  });
  try {
    const rt = r.kernel;
    const pressed = rt.estop.trigger("pressed before the reload");
    await waitFor(
      "the read-back's ReadSignals at the provider",
      () => Deno.readTextFileSync(logFile).includes("dev0 out"),
    );
    const config = rt.config;
    // A read-back that read on to verify_timeout_ms held the reload too (its answer came then).
    const report = await within(
      rt.reload({
        ...config,
        providers: config.providers.filter((p) => p.id !== "rb"),
        safety: {
          ...config.safety,
          safeState: {
            ...config.safety.safeState,
            hooks: [],
            expect: config.safety.safeState.expect.filter((e) => e.providerId !== "rb"),
          },
        },
      }),
      ENDS_WITHIN_MS,
    );
    assert.ok(report !== "still running", "the reload waited for a read-back that read on");
    assert.deepEqual(report.refused, [], JSON.stringify(report.refused));
    assert.equal(rt.registry.host("rb"), undefined, "the reload did not remove rb");
    const result = await within(pressed, ENDS_WITHIN_MS);
    assert.ok(result !== "still running", "the read-back read on after its provider was removed");
    assert.equal(result.verification.outcome, "unreachable", JSON.stringify(result.verification));
    const rb = result.verification.checks.find((c) => c.signal === "rb/dev0/out");
    assert.equal(rb?.outcome, "unreachable", JSON.stringify(rb));
    assert.equal(rb?.reason, "provider removed by a configuration reload: rb", JSON.stringify(rb));
    assert.equal(
      result.verification.checks.find((c) => c.signal === "kept/dev1/out")?.outcome,
      "verified",
    );
  } finally {
    await r.stop();
    await Deno.remove(logFile).catch(() => {});
  }
});

/** What `p` resolved with within `ms`, else "still running". */
async function within<T>(p: Promise<T>, ms: number): Promise<T | "still running"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"still running">((
    res,
  ) => (timer = setTimeout(() => res("still running"), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
