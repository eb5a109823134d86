/**
 * The router's debug line of a call quotes what the provider sent (the device id, the function's
 * name), cut, so that a quote in them cannot forge a line nor 10 KB flood one (an id with a line
 * break is refused at discovery: hasControlCharacter).
 */
import assert from "node:assert/strict";
import { CallRouter, QUOTED_FUNCTION_NAME_CHARS } from "../../src/control/mod.ts";
import { QUOTED_DEVICE_ID_CHARS } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { startProgrammable } from "../helpers/programmable_provider.ts";

Deno.test("CallRouter quotes a provider-sent device id in its debug line of a call, cut to QUOTED_DEVICE_ID_CHARS", async () => {
  const forged = 'd"0 ERROR forged';
  const long = "L".repeat(10_000);
  const fx = await startProgrammable({
    devices: { [forged]: { signals: [] }, [long]: { signals: [] } },
  }, {
    inProcess: true,
  });
  const { log, lines } = capturingLogger({ now: () => 0 });
  try {
    const router = new CallRouter({
      registry: fx.registry,
      cache: fx.cache,
      log,
      clock: fx.clock,
    });
    for (const deviceId of [forged, long]) {
      const r = await router.call({
        providerId: "p0",
        deviceId,
        functionId: 2,
        args: {},
        origin: "manual",
      });
      assert.equal(r.results.reads?.type, "string", "the call reached the device");
    }
    const calls = lines.filter((l) => l.startsWith("DEBUG") && l.includes(" call "))
      .map((l) => l.slice(l.indexOf(" manual call ") + 1));
    assert.deepEqual(calls, [
      'manual call "p0/d\\"0 ERROR forged" "stats"(2)',
      `manual call "p0/${"L".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026" "stats"(2)`,
    ]);
    assert.ok(QUOTED_FUNCTION_NAME_CHARS >= "stats".length);
  } finally {
    await fx.close();
  }
});
