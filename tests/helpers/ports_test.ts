/** The port helpers the process tests rely on: reading a child's port back, the free-port race. */
import assert from "node:assert/strict";
import {
  freePort,
  listeningPorts,
  NotListeningError,
  PORT_ATTEMPTS,
  startOnFreePort,
  waitForListeningPort,
} from "./ports.ts";

/** A child running `script` with `deno eval`, its stdio closed. */
function evalChild(script: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/** A child that listens on 127.0.0.1:`port` (0 = any) until killed; exits 1 when it cannot. */
function listener(port: number): Deno.ChildProcess {
  return evalChild(`try { Deno.listen({ hostname: "127.0.0.1", port: ${port} }); }
    catch { Deno.exit(1); }
    setInterval(() => {}, 1 << 30);`);
}

/** A child that listens on 127.0.0.1:`port` and `also` (a broker's second listener) until killed. */
function twoListener(port: number, also: number): Deno.ChildProcess {
  return evalChild(`try {
      Deno.listen({ hostname: "127.0.0.1", port: ${port} });
      Deno.listen({ hostname: "127.0.0.1", port: ${also} });
    } catch { Deno.exit(1); }
    setInterval(() => {}, 1 << 30);`);
}

async function end(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGKILL");
  } catch { /* already gone */ }
  await child.status;
}

const watch = (c: Deno.ChildProcess) => ({ pid: c.pid, ended: c.status });

Deno.test("waitForListeningPort reads back the port a child bound as port 0", async () => {
  const child = listener(0);
  try {
    const port = await waitForListeningPort(watch(child), { timeoutMs: 10_000 });
    assert.ok(port > 0);
    assert.deepEqual(listeningPorts(child.pid), [port]);
    // It is really that child's: connecting works.
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
  } finally {
    await end(child);
  }
  assert.deepEqual(listeningPorts(child.pid), [], "a process that is gone listens on nothing");
});

Deno.test("startOnFreePort starts the child again on another port when a stranger took the first", async () => {
  const tried: number[] = [];
  let stranger: Deno.Listener | null = null;
  const { port, started } = await startOnFreePort(
    (port) => {
      tried.push(port);
      // The race, made certain: someone binds the port between the pick and the child's bind.
      if (tried.length === 1) stranger = Deno.listen({ hostname: "127.0.0.1", port });
      return listener(port);
    },
    watch,
    end,
    { timeoutMs: 10_000 },
  );
  try {
    assert.equal(tried.length, 2);
    assert.equal(port, tried[1]);
    assert.notEqual(tried[1], tried[0]);
    assert.deepEqual(listeningPorts(started.pid), [port]);
  } finally {
    (stranger as Deno.Listener | null)?.close();
    await end(started);
  }
});

Deno.test("startOnFreePort starts the child again when a stranger took the second port it binds", async () => {
  // Mosquitto's TLS listener (tests/helpers/mosquitto.ts): a second port picked the same way.
  const tried: [number, number][] = [];
  const also = new Map<number, number>();
  let stranger: Deno.Listener | null = null;
  const { port, started } = await startOnFreePort(
    (port) => {
      const second = freePort();
      tried.push([port, second]);
      if (tried.length === 1) stranger = Deno.listen({ hostname: "127.0.0.1", port: second });
      const child = twoListener(port, second);
      also.set(child.pid, second);
      return child;
    },
    (c) => ({ ...watch(c), alsoPorts: [also.get(c.pid)!] }),
    end,
    { timeoutMs: 10_000 },
  );
  try {
    assert.equal(tried.length, 2);
    assert.equal(port, tried[1]![0]);
    assert.notEqual(tried[1]![1], tried[0]![1]);
    assert.deepEqual(listeningPorts(started.pid), [...tried[1]!].sort((a, b) => a - b));
  } finally {
    (stranger as Deno.Listener | null)?.close();
    await end(started);
  }
});

Deno.test("startOnFreePort gives up after PORT_ATTEMPTS races, and at once when the child fails by itself", async () => {
  const strangers: Deno.Listener[] = [];
  try {
    await assert.rejects(
      startOnFreePort(
        (port) => {
          strangers.push(Deno.listen({ hostname: "127.0.0.1", port }));
          return listener(port);
        },
        watch,
        end,
        { timeoutMs: 10_000 },
      ),
      (err) => err instanceof NotListeningError && err.portTakenByStranger,
    );
    assert.equal(strangers.length, PORT_ATTEMPTS);
  } finally {
    for (const s of strangers) s.close();
  }

  let starts = 0;
  await assert.rejects(
    startOnFreePort(
      () => {
        starts++;
        return evalChild("Deno.exit(3)");
      },
      watch,
      end,
      { timeoutMs: 10_000 },
    ),
    (err) =>
      err instanceof NotListeningError && !err.portTakenByStranger &&
      /ended before listening on port \d+$/.test(err.message),
  );
  assert.equal(starts, 1, "a child that fails by itself is not started again");
});
