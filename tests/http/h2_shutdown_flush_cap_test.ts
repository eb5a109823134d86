/**
 * Shutdown drops a connection still answering at the end of a bound HTTP_SHUTDOWN_FLUSH_MS after
 * the last answer written on it, planned anew from each answer written meanwhile
 * (h2_shutdown_flush_replan_test.ts), but never later than HTTP_SHUTDOWN_MAX_MS from shutdown's
 * start (#planDrop's cap). Only the final cut enforced that bound in any test: with the cap gone,
 * an answer written less than HTTP_SHUTDOWN_FLUSH_MS before HTTP_SHUTDOWN_MAX_MS planned the drop
 * past it, and the connection was left to the cut (its "still open ... cut" WARN line). Here the
 * drop itself is planned no later than HTTP_SHUTDOWN_MAX_MS and closes the connection then.
 *
 * One HTTP/2 connection carries a stream its client does not read (the connection never drains),
 * a call whose answer is not made within HTTP_SHUTDOWN_ANSWER_MS (it is answered 504), and two
 * answers whose ends are written when the test says, each inside the drop's window.
 */
import assert from "node:assert/strict";
import * as host from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  collect,
  endlessAnswer,
  h2Session,
  type Outcome,
  tlsServer,
  twoPartAnswer,
} from "./_h2_client.ts";

Deno.test("shutdown plans an HTTP/2 connection's flush-delayed drop no later than HTTP_SHUTDOWN_MAX_MS after it began, for an answer written less than HTTP_SHUTDOWN_FLUSH_MS before", async () => {
  const clock = new ManualClock();
  const { log, lines } = capturingLogger({ level: "warn", now: () => clock.nowMs() });
  let callArrived = false;
  const slow = new Map<string, { finish: () => void; answered: Promise<void> }>();
  const { server, caCert, remove } = await tlsServer({
    prefix: "http-h2-flush-cap-",
    clock,
    log,
    handler: (req, info) => {
      const path = new URL(req.url).pathname;
      if (path === "/big") return Promise.resolve(endlessAnswer());
      if (path.startsWith("/slow")) {
        const { res, finish } = twoPartAnswer();
        slow.set(path, { finish, answered: info.answered });
        return Promise.resolve(res);
      }
      callArrived = true; // a device call whose provider never answers
      return new Promise<Response>(() => {});
    },
  });
  const session = h2Session(server.port, caCert);
  try {
    let stalledHeaders = false;
    const stalled = session.request({ ":path": "/big" });
    stalled.on("response", () => (stalledHeaders = true));
    stalled.on("error", () => {});
    stalled.pause(); // its client reads nothing: the connection never drains
    const firstParts = new Set<string>();
    const slowOutcome = new Map<string, Promise<Outcome>>();
    for (const path of ["/slow1", "/slow2"]) {
      const s = session.request({ ":path": path });
      s.once("data", () => firstParts.add(path));
      slowOutcome.set(path, collect(s));
    }
    const call = collect(
      session.request({ ":path": "/call", ":method": "POST" }, { endStream: true }),
    );
    await waitFor(
      "the stalled stream answered, both slow answers' first parts read and the call in flight",
      () => stalledHeaders && firstParts.size === 2 && callArrived,
      10_000,
    );
    assert.equal(server.connectionStats().open, 1, "one HTTP/2 connection carries them all");

    const begun = clock.monoMs();
    const stopped = server.shutdown();
    const cutAt = begun + host.HTTP_SHUTDOWN_MAX_MS;
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_DRAIN_MS);
    const answerLeft = host.HTTP_SHUTDOWN_ANSWER_MS - host.HTTP_SHUTDOWN_DRAIN_MS;
    await waitFor(
      "the wait for the answer being made",
      () => clock.pendingDelays().includes(answerLeft),
      10_000,
    );
    clock.advance(answerLeft); // the call is answered 504, its connection's drop planned
    const rest = host.HTTP_SHUTDOWN_MAX_MS - host.HTTP_SHUTDOWN_ANSWER_MS;
    await waitFor(
      "the wait for the connection's end, up to the cut",
      () => clock.pendingDelays().includes(rest),
      10_000,
    );
    assert.equal((await call).status, 504);

    // Each slow answer's end is written 1 ms before the drop planned then: the first puts it off
    // to 1 ms before the cut, the second to HTTP_SHUTDOWN_FLUSH_MS after it, were it not capped.
    for (const path of ["/slow1", "/slow2"]) {
      clock.advance(host.HTTP_SHUTDOWN_FLUSH_MS - 1);
      assert.equal(server.connectionStats().open, 1, `dropped before ${path}'s end was written`);
      slow.get(path)!.finish();
      await slow.get(path)!.answered;
      assert.deepEqual(await slowOutcome.get(path), {
        status: 200,
        body: "part one;part two",
        error: null,
      });
    }
    assert.ok(clock.monoMs() > cutAt - host.HTTP_SHUTDOWN_FLUSH_MS, "inside the last window");
    const late = clock.pendingDueTimes().filter((t) => t > cutAt);
    assert.deepEqual(
      late.map((t) => t - begun),
      [],
      `timers due after HTTP_SHUTDOWN_MAX_MS (${host.HTTP_SHUTDOWN_MAX_MS} ms) from shutdown's ` +
        "start: the connection's drop was planned past it",
    );
    clock.advance(cutAt - clock.monoMs());
    await stopped;
    assert.equal(server.connectionStats().open, 0);
    const cut = lines.filter((l) => l.includes("still open"));
    assert.deepEqual(
      cut,
      [],
      "the connection was left to the cut, not dropped at HTTP_SHUTDOWN_MAX_MS",
    );
  } finally {
    for (const { finish } of slow.values()) {
      try {
        finish();
      } catch { /* its stream was cancelled: the connection is gone */ }
    }
    session.destroy();
    await server.shutdown();
    await remove();
  }
});
