/**
 * A call refused while the e-stop is latched names the latch first, with the remedy that works:
 * release the latch, then re-arm (it used to say "Call blocked in FAULT mode ... (switch to MANUAL
 * to re-arm)", advice the latch then refused). Driven over HTTP.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { inertSim } from "../safety/_fixture.ts";

const RELAY_ON = {
  provider_id: "sim0",
  device_id: "relayio0",
  function_id: 3,
  args: { enabled: { type: "bool", bool: true } },
};

Deno.test("POST /v0/call while latched is refused by the latch, naming the latch and the remedy that works", async () => {
  const fx = await startHttpFixture({ config: { providers: [inertSim()] } });
  try {
    const post = (path: string, body?: unknown) => fx.request("POST", path, { body });
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await post("/v0/estop")).status, 200);
    assert.equal((await fx.request("GET", "/v0/mode")).json.mode, "FAULT");

    const refused = await post("/v0/call", RELAY_ON);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.json.status.code, "FAILED_PRECONDITION");
    assert.equal(
      refused.json.status.message,
      "E-stop latched: actuating call sim0/relayio0 set_relay_ch3 refused; release the latch " +
        "(POST /v0/estop/clear), then re-arm (POST /v0/mode MANUAL)",
    );
    const audit = (await fx.request("GET", "/v0/audit?device_id=sim0/relayio0")).json.entries;
    assert.deepEqual(
      // deno-lint-ignore no-explicit-any
      audit.filter((e: any) => e.outcome === "refused").map((e: any) => e.refused_by),
      ["estop"],
    );

    // The remedy, in the order it names, works.
    assert.equal((await post("/v0/estop/clear")).status, 200);
    const stillFault = await post("/v0/call", RELAY_ON);
    assert.equal(stillFault.status, 409);
    assert.match(stillFault.json.status.message, /^Call blocked in FAULT mode: /);
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const accepted = await post("/v0/call", RELAY_ON);
    assert.equal(accepted.status, 200, accepted.text);
  } finally {
    await fx.close();
  }
});
