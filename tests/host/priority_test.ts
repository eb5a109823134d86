/**
 * setSessionPriority (src/host/priority.ts): this process's session set to an autogroup nice
 * through a shell child, only when this process leads its session, with the kernel's refusals
 * said for what they are. The shell through a double here; the real one in
 * tests/scenarios/cpu_priority_test.ts (a runtime child in a session of its own, and not).
 */
import assert from "node:assert/strict";
import {
  AUTOGROUP_MAX_TRIES,
  AUTOGROUP_RETRY_MS,
  type PriorityShell,
  SET_AUTOGROUP_SCRIPT,
  setSessionPriority,
} from "../../src/host/mod.ts";

/** A shell double answering each attempt with the next exit code (and stderr). */
function shell(codes: (number | { code: number; stderr: string })[]) {
  const waits: number[] = [];
  const nices: number[] = [];
  const sh: PriorityShell = {
    attempt: (nice) => {
      nices.push(nice);
      const next = codes.shift() ?? 0;
      return Promise.resolve(typeof next === "number" ? { code: next, stderr: "" } : next);
    },
    later: (fn, ms) => {
      waits.push(ms);
      queueMicrotask(fn);
    },
  };
  return { sh, waits, nices };
}

Deno.test("setSessionPriority passes the nice to its attempt and reads the attempt's answer", async () => {
  assert.match(SET_AUTOGROUP_SCRIPT, /\/bin\/echo "\$1" 2>&1 > \/proc\/\$PPID\/autogroup/);
  const set = shell([0]);
  assert.deepEqual(await setSessionPriority(-10, set.sh), { outcome: "set" });
  assert.deepEqual(set.nices, [-10]);
  assert.deepEqual(await setSessionPriority(0, shell([3]).sh), { outcome: "not_session_leader" });
  assert.deepEqual(await setSessionPriority(-10, shell([4]).sh), { outcome: "no_autogroups" });
  assert.deepEqual(await setSessionPriority(-10, shell([7]).sh), { outcome: "autogroups_off" });
  const eperm = { code: 6, stderr: "/bin/echo: write error: Operation not permitted" };
  assert.deepEqual(await setSessionPriority(-10, shell([eperm]).sh), {
    outcome: "not_permitted",
    detail: "/bin/echo: write error: Operation not permitted",
  });
  const noShell: PriorityShell = {
    attempt: () => Promise.reject(new Deno.errors.NotFound("/bin/sh")),
    later: () => {},
  };
  assert.equal((await setSessionPriority(-10, noShell)).outcome, "not_permitted");
});

Deno.test("setSessionPriority tries again after EAGAIN, AUTOGROUP_MAX_TRIES times at most", async () => {
  const retried = shell([5, 5, 0]);
  assert.deepEqual(await setSessionPriority(-10, retried.sh), { outcome: "set" });
  assert.equal(retried.nices.length, 3);
  assert.deepEqual(retried.waits, [AUTOGROUP_RETRY_MS, AUTOGROUP_RETRY_MS]);
  assert.equal(AUTOGROUP_RETRY_MS, 110);
  const always = shell(Array(100).fill(5));
  assert.deepEqual(await setSessionPriority(-10, always.sh), { outcome: "busy" });
  assert.equal(always.nices.length, AUTOGROUP_MAX_TRIES);
});
