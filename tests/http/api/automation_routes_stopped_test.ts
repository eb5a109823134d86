/**
 * A value sent before a stop is never set after it: a POST /v0/parameters whose headers arrived
 * before the e-stop latched (or the runtime entered FAULT) but whose body was still arriving is
 * refused 409 when the body completes, even if the latch was released meanwhile. A tree reads
 * parameters as setpoints: one set after the stop would act on the re-armed machine for someone
 * who asked before it. Real sockets on loopback, the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../helpers/kernel.ts";
import { type HttpFixture, startHttpFixture } from "../../helpers/runtime_fixture.ts";
import { readResponse, send } from "../_raw_socket.ts";

const AUTOMATION = {
  enabled: true,
  parameters: [{ name: "setpoint", type: "double" as const, allowedValues: [], default: 20 }],
};

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

async function ok(fx: HttpFixture, method: string, path: string, body?: unknown) {
  const res = await fx.request(method, path, body === undefined ? {} : { body });
  assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
  return res.json;
}

async function setpoint(fx: HttpFixture): Promise<number> {
  const list = await ok(fx, "GET", "/v0/parameters");
  return list.parameters.find((p: { name: string }) => p.name === "setpoint").value;
}

/**
 * Sends `POST /v0/parameters setpoint=value` slowly, runs `between` (a stop, or nothing) while its
 * body is still arriving, then completes it; returns the answer.
 */
async function slowSet(fx: HttpFixture, value: number, between: () => Promise<void>) {
  const { port } = await fx.serve();
  const post = await startPost(
    port,
    "/v0/parameters",
    JSON.stringify({ name: "setpoint", value }),
    5,
  );
  try {
    await waitFor("the parameter request in flight", () => fx.api.inFlight === 1);
    await between();
    await send(post.conn, post.rest);
    const answer = await readResponse(post.conn);
    assert.ok(answer);
    return answer;
  } finally {
    post.conn.close();
  }
}

async function stoppedRefusals(fx: HttpFixture): Promise<Record<string, unknown>[]> {
  const audit = await ok(fx, "GET", "/v0/audit?limit=1000");
  return audit.entries.filter((e: Record<string, unknown>) =>
    e.action === "parameter" && e.outcome === "refused" && e.refused_by === "stopped"
  );
}

Deno.test("POST /v0/parameters whose body was still arriving when the e-stop latched is refused 409 after the clear", async () => {
  const fx = await startHttpFixture({
    config: { automation: AUTOMATION, safety: { zeroIsSafe: true } },
  });
  try {
    const answer = await slowSet(fx, 80, async () => {
      await ok(fx, "POST", "/v0/estop");
      await ok(fx, "POST", "/v0/estop/clear");
    });
    assert.equal(answer.status, 409, answer.body);
    const status = JSON.parse(answer.body).status;
    assert.equal(status.code, "FAILED_PRECONDITION");
    assert.match(status.message, /POST \/v0\/parameters: .*stop.* while its body arrived/);
    assert.equal(await setpoint(fx), 20, "the value sent before the stop was set after it");
    const refused = await stoppedRefusals(fx);
    assert.equal(refused.length, 1, JSON.stringify(refused));
    assert.equal(refused[0]!.function, "setpoint");
    // A value sent after the stop is set.
    await ok(fx, "POST", "/v0/parameters", { name: "setpoint", value: 40 });
    assert.equal(await setpoint(fx), 40);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/parameters whose body was still arriving when the runtime entered FAULT is refused 409", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const answer = await slowSet(fx, 80, async () => {
      await ok(fx, "POST", "/v0/mode", { mode: "FAULT" });
    });
    assert.equal(answer.status, 409, answer.body);
    assert.equal(await setpoint(fx), 20);
    assert.equal((await stoppedRefusals(fx)).length, 1);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/parameters whose body arrives slowly with no stop meanwhile is set", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const answer = await slowSet(fx, 80, async () => {
      await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
    });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(await setpoint(fx), 80);
    assert.equal((await stoppedRefusals(fx)).length, 0);
  } finally {
    await fx.close();
  }
});
