/** The bench's raw HTTP clients (bench/lib/api.ts) against real HTTP servers on loopback. */
import assert from "node:assert/strict";
import { Api, BenchFailure, KeepAliveConnection } from "../../bench/lib/api.ts";

/** A server that answers every request with its count and the client's port, as JSON. */
async function withServer(
  body: (base: string, seen: { ports: Set<number>; bodies: string[] }) => Promise<void>,
  answer?: (req: Request) => Response | null,
): Promise<void> {
  const seen = { ports: new Set<number>(), bodies: [] as string[] };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req, info) => {
      seen.ports.add((info.remoteAddr as Deno.NetAddr).port);
      seen.bodies.push(await req.text());
      return answer?.(req) ?? Response.json({ n: seen.bodies.length, pad: "x".repeat(40_000) });
    },
  );
  try {
    await body(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

Deno.test("KeepAliveConnection sends every request on one connection and reads each answer whole", async () => {
  await withServer(async (base, seen) => {
    const c = new KeepAliveConnection(base);
    try {
      for (let i = 0; i < 5; i++) {
        const ms = await c.timed("POST", "/x", JSON.stringify({ i }));
        assert.ok(ms >= 0 && ms < 15_000);
      }
      await c.timed("GET", "/y");
      await c.timed("GET", "/y");
    } finally {
      c.close();
    }
    // One client port: the connection was kept; each body arrived as sent (an answer of 40 kB,
    // longer than one read, was read to its end before the next request).
    assert.equal(seen.ports.size, 1);
    assert.deepEqual(seen.bodies.slice(0, 5), [0, 1, 2, 3, 4].map((i) => JSON.stringify({ i })));
    assert.equal(seen.bodies.length, 7);
  });
});

Deno.test("KeepAliveConnection: a non-2xx answer is a BenchFailure naming it; the connection stays usable", async () => {
  await withServer(
    async (base, seen) => {
      const c = new KeepAliveConnection(base);
      try {
        await assert.rejects(c.timed("GET", "/missing"), (err: unknown) => {
          assert.ok(err instanceof BenchFailure);
          assert.match(err.message, /GET \/missing \(keep-alive\) -> HTTP\/1\.1 404/);
          return true;
        });
        await c.timed("GET", "/ok");
      } finally {
        c.close();
      }
      assert.equal(seen.bodies.length, 2);
      assert.equal(seen.ports.size, 1);
    },
    (req) => new URL(req.url).pathname === "/missing" ? new Response("no", { status: 404 }) : null,
  );
});

Deno.test("KeepAliveConnection connects anew, once, when the server closed the idle connection", async () => {
  // A server that closes each connection after one answer (as a keep-alive timeout would).
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const answer = new TextEncoder().encode(
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
  );
  let accepted = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      accepted++;
      await conn.read(new Uint8Array(4096));
      await conn.write(answer);
      conn.close();
    }
  })();
  const c = new KeepAliveConnection(`http://127.0.0.1:${listener.addr.port}`);
  try {
    for (let i = 0; i < 3; i++) await c.timed("GET", "/");
    assert.equal(accepted, 3, "a connection per request, each after the last was closed");
  } finally {
    c.close();
    listener.close();
    await serving.catch(() => {});
  }
});

/** A server that accepts connections and never reads or answers: `body` gets its base URL. */
async function withSilentServer(
  body: (base: string, held: readonly Deno.Conn[]) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const serving = (async () => {
    for await (const conn of listener) held.push(conn); // reads nothing, answers nothing
  })();
  try {
    await body(`http://127.0.0.1:${listener.addr.port}`, held);
  } finally {
    for (const conn of held) conn.close();
    listener.close();
    await serving.catch(() => {});
  }
}

Deno.test("KeepAliveConnection: a server that never answers is a BenchFailure after its timeout", async () => {
  await withSilentServer(async (base) => {
    const c = new KeepAliveConnection(base, 200);
    try {
      await assert.rejects(c.timed("GET", "/"), (err: unknown) => {
        assert.ok(err instanceof BenchFailure);
        assert.match(err.message, /GET \/: no answer within 200 ms/);
        return true;
      });
    } finally {
      c.close();
    }
  });
});

Deno.test("Api.timedNewConnection: a server that accepts and never answers is a BenchFailure after its timeout", async () => {
  await withSilentServer(async (base, held) => {
    await assert.rejects(
      new Api(base, 200).timedNewConnection("POST", "/v0/call", "{}"),
      (err: unknown) => {
        assert.ok(err instanceof BenchFailure);
        assert.match(err.message, /POST \/v0\/call \(new connection\): no answer within 200 ms/);
        return true;
      },
    );
    assert.equal(held.length, 1, "one connection, not retried");
  });
});

Deno.test("Api.timedNewConnection sends the request on a connection of its own and reads the answer to EOF", async () => {
  await withServer(async (base, seen) => {
    const api = new Api(base, 2_000);
    for (let i = 0; i < 2; i++) {
      const ms = await api.timedNewConnection("POST", "/x", '{"a":1}');
      assert.ok(ms >= 0);
    }
    assert.equal(seen.ports.size, 2, "a connection per request");
    assert.deepEqual(seen.bodies, ['{"a":1}', '{"a":1}']);
  });
  await withServer(async (base) => {
    await assert.rejects(new Api(base).timedNewConnection("GET", "/"), (err: unknown) => {
      assert.ok(err instanceof BenchFailure);
      assert.match(err.message, /GET \/ \(new connection\) -> HTTP\/1\.1 503/);
      return true;
    });
  }, () => new Response("busy", { status: 503 }));
});
