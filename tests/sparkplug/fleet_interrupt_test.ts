/**
 * Ctrl-C (SIGINT) or SIGTERM during the fleet view's window. The view's MQTT session is persistent
 * for its window (Clean Session 0) and discarded when the window ends; a signal ended the process
 * before that, leaving the session on the broker (Mosquitto keeps it forever by default, queueing
 * QoS 1 messages for it: memory on the plant broker that grows with every interrupted run). The
 * signal now ends the window early: the view prints what it saw, says it was interrupted, discards
 * its session and exits 0. On a real Mosquitto, the real command as a child process.
 */
import assert from "node:assert/strict";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { listeningFleet, spawnRuntimeCli } from "./_fleet_rig.ts";

/** Longest wait for the child's view to be subscribed (its start type-checks nothing: a few s). */
const SUBSCRIBED_WITHIN_MS = 30000;

/** The client id of the fleet view the broker logged subscribing to `filter`, once it has. */
async function viewSubscribed(broker: Mosquitto, filter: string): Promise<string> {
  const deadline = Date.now() + SUBSCRIBED_WITHIN_MS;
  for (;;) {
    // Mosquitto logs a SUBSCRIBE's filters as "<client id> <qos> <filter>", one per line.
    const line = (await broker.log()).split("\n").find((l) =>
      l.endsWith(` 1 ${filter}`) && / fleet-view-[0-9a-f-]+ 1 /.test(l)
    );
    if (line !== undefined) return / (fleet-view-[0-9a-f-]+) 1 /.exec(line)![1]!;
    if (Date.now() > deadline) throw new Error(`no fleet view subscribed to ${filter}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Ends a child the test left running (it failed before the child's output was read). */
async function reap(child: Deno.ChildProcess | undefined): Promise<void> {
  try {
    child?.kill("SIGKILL");
  } catch { /* ended */ }
  await child?.output().catch(() => {}); // read already: its streams are the test's
}

/** Whether the broker holds a session for `clientId` (a probe's CONNACK Session Present). */
async function sessionLeft(broker: Mosquitto, clientId: string): Promise<boolean> {
  const probe = mqtt.connect(broker.url, { clientId, clean: false, reconnectPeriod: 0 });
  try {
    const connack = await new Promise<{ sessionPresent: boolean }>((r) => probe.once("connect", r));
    return connack.sessionPresent;
  } finally {
    await probe.endAsync(true);
  }
}

/** A fleet view's output once it ended, as text. */
async function ended(child: Deno.ChildProcess) {
  const out = await child.output();
  const dec = new TextDecoder();
  const { code, signal } = out;
  return { code, signal, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * `runtime --fleet <broker> ...args` as a child process on a new broker (logging), once the view
 * subscribed to `filter`: `fn` gets the broker, the child and the view's client id; the child and
 * the broker are ended whatever `fn` does.
 */
async function withSubscribedView(
  args: string[],
  filter: string,
  fn: (view: { broker: Mosquitto; child: Deno.ChildProcess; clientId: string }) => Promise<void>,
): Promise<void> {
  const broker = await Mosquitto.start({ log: true });
  let child: Deno.ChildProcess | undefined;
  try {
    child = spawnRuntimeCli(["--fleet", broker.url, ...args]);
    const clientId = await viewSubscribed(broker, filter);
    await fn({ broker, child, clientId });
  } finally {
    await reap(child);
    await broker.dispose();
  }
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.test({
    name:
      `${signal} during the fleet view's window: it prints what it saw, says it was interrupted, exits 0 and leaves no session on the broker`,
    ignore: mosquittoMissing(),
    fn: () =>
      withSubscribedView(
        ["--group", "lab", "--wait-ms", "60000", "--format", "json"],
        "spBv1.0/lab/#",
        async ({ broker, child, clientId }) => {
          child.kill(signal);
          const out = await ended(child);
          assert.equal(
            await sessionLeft(broker, clientId),
            false,
            `the view's session ${clientId} is left on the broker (exit ${out.code}, ${
              out.signal ?? "no signal"
            }; stderr: ${out.stderr})`,
          );
          assert.equal(out.code, 0, out.stderr);
          assert.deepEqual(JSON.parse(out.stdout), {
            nodes: [],
            truncated: false,
            interrupted: true,
            refusedOversize: 0,
          });
        },
      ),
  });
}

Deno.test({
  name:
    "the same SIGINT delivered twice at once (a terminal and `deno task` both pass on one Ctrl-C) is one interrupt: the session is discarded, exit 0",
  ignore: mosquittoMissing(),
  fn: () =>
    withSubscribedView(
      ["--wait-ms", "60000"],
      "spBv1.0/+/#",
      async ({ broker, child, clientId }) => {
        child.kill("SIGINT");
        child.kill("SIGINT");
        const out = await ended(child);
        assert.equal(await sessionLeft(broker, clientId), false, out.stderr);
        assert.equal(out.code, 0, out.stderr);
        assert.match(out.stdout, /^\(interrupted by SIGINT: /m);
      },
    ),
});

Deno.test({
  name:
    "a second signal while the view discards its session (the broker hung) exits at once: 4, nothing printed, the session said possibly left",
  ignore: mosquittoMissing(),
  fn: () =>
    withSubscribedView(["--wait-ms", "60000"], "spBv1.0/+/#", async ({ broker, child }) => {
      // The discard's CONNACK never comes: without a second signal the view waits
      // FLEET_SESSION_DISCARD_MS for it, then prints and exits 0.
      broker.signal("SIGSTOP");
      child.kill("SIGINT");
      child.kill("SIGTERM");
      const out = await ended(child);
      assert.equal(out.code, 4, out.stderr);
      assert.equal(out.stdout, "");
      assert.match(out.stderr, /exiting now, nothing printed; its MQTT session .* may be left/);
    }),
});

Deno.test("an interrupted window returns what the view saw before it, said interrupted, and discards the session", async () => {
  const stop = new AbortController();
  const { clock, collected, send, discards } = await listeningFleet(60000, {
    interrupt: stop.signal,
  });
  send("NBIRTH/n");
  stop.abort();
  const { nodes, interrupted } = await collected;
  assert.equal(interrupted, true);
  assert.deepEqual(nodes.map((n) => [n.node, n.reachable, n.born]), [["n", true, true]]);
  assert.equal(discards.length, 1, "the session is discarded (a clean connection under its id)");
  assert.equal(clock.pendingTimers, 0, "no timer outlives the window");
});

Deno.test({
  name:
    "the second signal's line names the view's MQTT session by its real client id, the one the broker holds",
  ignore: mosquittoMissing(),
  fn: async () => {
    const broker = await Mosquitto.start({ log: true });
    let child: Deno.ChildProcess | undefined;
    try {
      child = spawnRuntimeCli(["--fleet", broker.url, "--wait-ms", "60000"]);
      const clientId = await viewSubscribed(broker, "spBv1.0/+/#");
      // The discard never ends (the broker hung): the second signal finds the session still there.
      broker.signal("SIGSTOP");
      child.kill("SIGINT");
      child.kill("SIGTERM");
      const out = await child.output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 4, stderr);
      assert.ok(
        stderr.includes(`its MQTT session (client id ${clientId}) may be left on the broker`),
        stderr,
      );
    } finally {
      await reap(child);
      await broker.dispose();
    }
  },
});
