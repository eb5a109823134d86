/**
 * Between HttpApi.close() (the runtime's stop ends the event streams) and the end of the server's
 * drain (up to HTTP_SHUTDOWN_ANSWER_MS), connections still held carry new requests: an HTTP/2
 * connection (a console over HTTPS) whose call is still being answered takes new streams. They
 * were handled as usual, so a runtime that was stopping, its behavior tree already halted so that
 * nothing goes on commanding the machine, still changed modes and sent device calls. They are now
 * refused (503, shutting down), all but the priority routes: an e-stop still latches.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

Deno.test("after the API is closed for shutdown, a new command is refused and an e-stop still latches", async () => {
  const fx = await startHttpFixture();
  try {
    fx.api.close();
    const mode = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    assert.equal(fx.runtime.modes.current(), "IDLE", "the mode changed during shutdown");
    assert.equal(mode.status, 503, mode.text);
    assert.match(mode.text, /shutting down/);
    const estop = await fx.request("POST", "/v0/estop", {});
    assert.equal(estop.status, 200, estop.text);
    assert.ok(fx.runtime.estop.status().latched, "latched");
  } finally {
    await fx.close();
  }
});
