/**
 * A command sent before a stop is never carried out after it: a POST /v0/call or an arming POST
 * /v0/mode whose headers arrived before the e-stop latched (or the runtime entered FAULT or IDLE)
 * but whose body was still arriving is refused 409 when the body completes, even if the latch was
 * released and the machine re-armed meanwhile. Real sockets on loopback, the simulated provider as a child
 * process.
 */
import assert from "node:assert/strict";
import { afterPolls, waitFor } from "../helpers/kernel.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { readResponse, send } from "./_raw_socket.ts";

/** set_motor_duty of the simulated motorctl0 (function id 10), motor 1 to `duty`. */
function dutyCall(duty: number): string {
  return JSON.stringify({
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: duty },
    },
  });
}

/** Sends a POST's head and the first `sent` bytes of its body; the rest is left to the test. */
async function startPost(
  port: number,
  path: string,
  body: string,
  sent: number,
): Promise<{ conn: Deno.TcpConn; rest: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await send(
    conn,
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${new TextEncoder().encode(body).length}\r\n\r\n${body.slice(0, sent)}`,
  );
  return { conn, rest: body.slice(sent) };
}

async function motor1Duty(fx: HttpFixture): Promise<number> {
  const state = await fx.request("GET", "/v0/state/sim0/motorctl0?signal_id=motor1_duty");
  assert.equal(state.status, 200, state.text);
  return state.json.values[0].value.double;
}

async function ok(fx: HttpFixture, method: string, path: string, body?: unknown) {
  const res = await fx.request(method, path, body === undefined ? {} : { body });
  assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
  return res.json;
}

Deno.test("POST /v0/call whose body was still arriving when the e-stop latched is refused 409 after clear and re-arm", async () => {
  const fx = await startHttpFixture({
    config: { pollingIntervalMs: 100, safety: { zeroIsSafe: true } },
  });
  const { port } = await fx.serve();
  const conns: Deno.Conn[] = [];
  try {
    await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
    // Control: the same slow body with no stop in between is carried out.
    const plain = await startPost(port, "/v0/call", dutyCall(0.3), 10);
    conns.push(plain.conn);
    await waitFor("the call in flight", () => fx.api.inFlight === 1);
    await send(plain.conn, plain.rest);
    assert.equal((await readResponse(plain.conn))?.status, 200);
    await waitFor("motor 1 at 0.3", async () => await motor1Duty(fx) === 0.3);

    const stale = await startPost(port, "/v0/call", dutyCall(0.8), 10);
    conns.push(stale.conn);
    await waitFor("the call in flight", () => fx.api.inFlight === 1);
    const stop = await ok(fx, "POST", "/v0/estop");
    assert.equal(stop.latched, true);
    await ok(fx, "POST", "/v0/estop/clear");
    assert.equal((await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" })).mode, "MANUAL");
    await waitFor("motor 1 at 0", async () => await motor1Duty(fx) === 0);

    await send(stale.conn, stale.rest);
    const answer = await readResponse(stale.conn);
    assert.equal(answer?.status, 409, answer?.body);
    const status = JSON.parse(answer!.body).status;
    assert.equal(status.code, "FAILED_PRECONDITION");
    assert.match(status.message, /POST \/v0\/call: .*stop.* while its body arrived/);
    await afterPolls(fx.runtime, "sim0/motorctl0", 3);
    assert.equal(await motor1Duty(fx), 0, "the command sent before the stop moved the motor");

    const audit = await ok(fx, "GET", "/v0/audit?origin=http&limit=1000");
    const refused = audit.entries.filter((e: Record<string, unknown>) =>
      e.action === "call" && e.outcome === "refused" && e.refused_by === "stopped"
    );
    assert.equal(refused.length, 1, JSON.stringify(audit.entries));
    assert.equal(refused[0].device_handle, "sim0/motorctl0");

    // A call sent after the re-arm is carried out.
    await ok(fx, "POST", "/v0/call", JSON.parse(dutyCall(0.5)));
    await waitFor("motor 1 at 0.5", async () => await motor1Duty(fx) === 0.5);
  } finally {
    for (const c of conns) c.close();
    await fx.close();
  }
});

Deno.test("POST /v0/mode MANUAL whose body was still arriving when the e-stop latched does not re-arm after the clear", async () => {
  const fx = await startHttpFixture({
    config: { pollingIntervalMs: 100, safety: { zeroIsSafe: true } },
  });
  const { port } = await fx.serve();
  const conns: Deno.Conn[] = [];
  try {
    const stale = await startPost(port, "/v0/mode", JSON.stringify({ mode: "MANUAL" }), 3);
    conns.push(stale.conn);
    await waitFor("the mode request in flight", () => fx.api.inFlight === 1);
    await ok(fx, "POST", "/v0/estop");
    await ok(fx, "POST", "/v0/estop/clear");
    assert.equal(fx.runtime.modes.current(), "FAULT");

    await send(stale.conn, stale.rest);
    const answer = await readResponse(stale.conn);
    assert.equal(answer?.status, 409, answer?.body);
    assert.match(JSON.parse(answer!.body).status.message, /POST \/v0\/mode: .*stop/);
    assert.equal(fx.runtime.modes.current(), "FAULT", "re-armed by a request sent before the stop");

    // The same slow request with no stop in between re-arms (the clear came before it).
    const later = await startPost(port, "/v0/mode", JSON.stringify({ mode: "MANUAL" }), 3);
    conns.push(later.conn);
    await waitFor("the mode request in flight", () => fx.api.inFlight === 1);
    await send(later.conn, later.rest);
    assert.equal((await readResponse(later.conn))?.status, 200);
    assert.equal(fx.runtime.modes.current(), "MANUAL");
  } finally {
    for (const c of conns) c.close();
    await fx.close();
  }
});

// A stop that is no e-stop: the runtime entered FAULT, or the operator disarmed.
for (
  const [mode, when] of [
    ["FAULT", "the runtime entered FAULT (no e-stop)"],
    ["IDLE", "the operator disarmed (MANUAL -> IDLE)"],
  ] as const
) {
  Deno.test(`POST /v0/call whose body was still arriving when ${when} is refused 409 after re-arm`, async () => {
    const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
    const { port } = await fx.serve();
    const conns: Deno.Conn[] = [];
    try {
      await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
      const stale = await startPost(port, "/v0/call", dutyCall(0.8), 10);
      conns.push(stale.conn);
      await waitFor("the call in flight", () => fx.api.inFlight === 1);
      await ok(fx, "POST", "/v0/mode", { mode });
      await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
      await send(stale.conn, stale.rest);
      const answer = await readResponse(stale.conn);
      assert.equal(answer?.status, 409, answer?.body);
      assert.equal(JSON.parse(answer!.body).status.code, "FAILED_PRECONDITION");
      await afterPolls(fx.runtime, "sim0/motorctl0", 3);
      assert.equal(await motor1Duty(fx), 0);
    } finally {
      for (const c of conns) c.close();
      await fx.close();
    }
  });
}
