/**
 * SessionPriority (src/app/session_priority.ts): the runtime's session at autogroup nice -10
 * exactly while a provider starts, restarts or is down, back at 0 once every provider is up; one
 * setting at a time, the latest wish made after it; the first result said in one line; a refusal
 * that will not change ends the asking. The setting through a double here; the real one in
 * tests/scenarios/cpu_priority_test.ts.
 */
import assert from "node:assert/strict";
import type { PriorityResult } from "../../src/common/mod.ts";
import {
  RUNTIME_AUTOGROUP_NICE,
  SESSION_PRIORITY_BUSY_RETRIES,
  SESSION_PRIORITY_BUSY_RETRY_MS,
  SessionPriority,
  SETTLED_AUTOGROUP_NICE,
} from "../../src/app/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

/** Providers whose upness the test flips, and a setting whose answers the test releases. */
function rig(o: { down: boolean }) {
  let down = o.down;
  const listeners: (() => void)[] = [];
  const asked: number[] = [];
  const pending: ((r: PriorityResult) => void)[] = [];
  const { log, lines } = capturingLogger();
  const clock = new ManualClock();
  const priority = new SessionPriority(
    (nice) => {
      asked.push(nice);
      return new Promise((resolve) => pending.push(resolve));
    },
    { anyDown: () => down, onChange: (l) => listeners.push(l) },
    log,
    clock,
  );
  return {
    priority,
    clock,
    asked,
    lines,
    flip(nowDown: boolean) {
      down = nowDown;
      for (const l of listeners) l();
    },
    async answer(r: PriorityResult) {
      pending.shift()!(r);
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

Deno.test("SessionPriority raises the session while a provider is down and lowers it once all are up", async () => {
  assert.equal(RUNTIME_AUTOGROUP_NICE, -10);
  assert.equal(SETTLED_AUTOGROUP_NICE, 0);
  const r = rig({ down: true }); // at construction the providers are still starting
  assert.deepEqual(r.asked, [-10]);
  await r.answer({ outcome: "set" });
  assert.equal(r.priority.applied, -10);
  assert.equal(r.lines.length, 1);
  assert.match(
    r.lines[0]!,
    /^INFO {2}\S+ cpu priority: this runtime's session at autogroup nice -10 while providers start, restart or are down/,
  );
  r.flip(false);
  assert.deepEqual(r.asked, [-10, 0]);
  await r.answer({ outcome: "set" });
  assert.equal(r.priority.applied, 0);
  // A change that does not change what is wanted asks nothing.
  r.flip(false);
  assert.deepEqual(r.asked, [-10, 0]);
  // A storm: raised again; later settings are said at debug only.
  r.flip(true);
  assert.deepEqual(r.asked, [-10, 0, -10]);
  await r.answer({ outcome: "set" });
  assert.equal(r.lines.length, 3);
  assert.match(r.lines[2]!, /^DEBUG \S+ cpu priority: autogroup nice -10: set$/);
});

Deno.test("SessionPriority makes one setting at a time and then the latest wish, skipping what flipped back", async () => {
  const r = rig({ down: true });
  r.flip(false); // up before the raise was answered
  r.flip(true);
  r.flip(false);
  assert.deepEqual(r.asked, [-10], "one at a time");
  await r.answer({ outcome: "set" });
  assert.deepEqual(r.asked, [-10, 0], "then the latest wish: all up");
  await r.answer({ outcome: "set" });
  assert.equal(r.priority.applied, 0);

  // Everything up from the start: the session is at its default, nothing is asked.
  const quiet = rig({ down: false });
  assert.deepEqual(quiet.asked, []);
  assert.equal(quiet.priority.applied, null);
});

Deno.test("SessionPriority stops asking after a refusal that will not change, and says it once (WARN naming the fix when not permitted)", async () => {
  const r = rig({ down: true });
  await r.answer({
    outcome: "not_permitted",
    detail: "/bin/echo: write error: Operation not permitted",
  });
  assert.equal(r.priority.applied, null);
  assert.equal(r.lines.length, 1);
  assert.match(
    r.lines[0]!,
    /^WARN {2}\S+ cpu priority: not raised: autogroup nice -10 needs LimitNICE=-10 \(as the systemd unit sets\) or CAP_SYS_NICE \(\/bin\/echo: write error: Operation not permitted\); without it, providers restarting together can delay an e-stop by ~200 ms$/,
  );
  r.flip(false);
  r.flip(true);
  assert.deepEqual(r.asked, [-10], "never asked again");

  const shell = rig({ down: true });
  await shell.answer({ outcome: "not_session_leader" });
  shell.flip(false);
  assert.deepEqual(shell.asked, [-10]);
  assert.match(
    shell.lines[0]!,
    /^INFO {2}\S+ cpu priority: not raised: this runtime does not lead its own session/,
  );

  // EAGAIN to the end: asked again at the next change.
  const busy = rig({ down: true });
  await busy.answer({ outcome: "busy" });
  assert.match(busy.lines[0]!, /^WARN {2}\S+ cpu priority: not raised yet: /);
  assert.deepEqual(busy.asked, [-10], "not again at once");
  busy.flip(true);
  assert.deepEqual(busy.asked, [-10, -10]);
});

Deno.test("SessionPriority asks again a while after the kernel refused for now (busy), with no provider change, a bounded number of times in a row", async () => {
  const r = rig({ down: true });
  await r.answer({ outcome: "busy" });
  assert.match(
    r.lines[0]!,
    /not raised yet: .*tried again in 1000 ms \(at most 10 times in a row\) and at the next provider change$/,
  );
  r.clock.advance(SESSION_PRIORITY_BUSY_RETRY_MS - 1);
  assert.deepEqual(r.asked, [-10], "not before the retry is due");
  r.clock.advance(1);
  assert.deepEqual(r.asked, [-10, -10], "asked again, the providers unchanged");
  await r.answer({ outcome: "set" });
  assert.equal(r.priority.applied, -10);

  // Busy every time: SESSION_PRIORITY_BUSY_RETRIES retries, then only a provider change asks.
  const busy = rig({ down: true });
  for (let i = 0; i <= SESSION_PRIORITY_BUSY_RETRIES; i++) {
    await busy.answer({ outcome: "busy" });
    busy.clock.advance(SESSION_PRIORITY_BUSY_RETRY_MS);
  }
  assert.equal(busy.asked.length, SESSION_PRIORITY_BUSY_RETRIES + 1);
  busy.clock.advance(10 * SESSION_PRIORITY_BUSY_RETRY_MS);
  assert.equal(busy.asked.length, SESSION_PRIORITY_BUSY_RETRIES + 1, "given up until a change");
  busy.flip(true);
  assert.equal(busy.asked.length, SESSION_PRIORITY_BUSY_RETRIES + 2, "a change asks again");
  // A retry due when the runtime stops is not made.
  await busy.answer({ outcome: "busy" });
  busy.priority.stop();
  busy.clock.advance(SESSION_PRIORITY_BUSY_RETRY_MS);
  assert.equal(busy.asked.length, SESSION_PRIORITY_BUSY_RETRIES + 2, "none after stop");
});
