/**
 * HttpApi.setTokens applies the token sets in the order it was called, whatever each one's
 * digesting takes: of two calls made at once, the first's token digest is held (the test wraps
 * crypto.subtle.digest) until every digest asked for after it has finished, yet the second call's
 * tokens are the ones in force, and it reports its changes against the first's. Through the
 * handler (in-process); the runtime is never started.
 */
import assert from "node:assert/strict";
import type { NamedToken } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const REMOTE = "192.0.2.42";
const DEFAULT_TOKEN = "default-token-4b9e1d7a3c05f2";
const BOSS: NamedToken = { name: "boss", role: "admin", token: "admin-token-0d6f2b8e4a19" };
const SHIFT: NamedToken = { name: "shift", role: "operator", token: "operator-token-7a3c9e1f5b28" };
/** The first call's new token: of a length no other token here has (its digest is held). */
const BULK: NamedToken = { name: "bulk", role: "viewer", token: "bulk-token-".padEnd(97, "5") };

/**
 * Wraps crypto.subtle.digest until `restore()`: the digest of BULK's token waits for `release()`;
 * `after` holds every digest asked for after it (let through).
 */
function holdBulkDigest() {
  const subtle = crypto.subtle;
  const real = subtle.digest;
  const bulkBytes = new TextEncoder().encode(BULK.token).byteLength;
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  let held = false;
  const after: Promise<unknown>[] = [];
  Object.defineProperty(subtle, "digest", {
    configurable: true,
    writable: true,
    value: (algorithm: AlgorithmIdentifier, data: BufferSource) => {
      if (data.byteLength === bulkBytes) {
        held = true;
        return released.then(() => real.call(subtle, algorithm, data));
      }
      const digest = real.call(subtle, algorithm, data);
      if (held) after.push(digest.catch(() => {}));
      return digest;
    },
  });
  return {
    release,
    after,
    restore: () => void delete (subtle as unknown as Record<string, unknown>).digest,
  };
}

Deno.test("HttpApi.setTokens called twice at once leaves the second call's tokens in force, the first's digest finishing last", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: DEFAULT_TOKEN, authExemptLoopback: false } },
    api: { apiToken: DEFAULT_TOKEN, tokens: [BOSS] },
  });
  const digests = holdBulkDigest();
  try {
    const http = fx.services.config.http;
    const first = fx.api.setTokens(http, DEFAULT_TOKEN, [BOSS, BULK]);
    const second = fx.api.setTokens(http, DEFAULT_TOKEN, [BOSS, SHIFT]);
    // The first call's digest finishes after every one asked for since (none, if the second
    // call waits for the first).
    await Promise.all(digests.after);
    digests.release();
    const [a, b] = await Promise.all([first, second]);
    digests.restore();
    const ask = async (t: NamedToken) =>
      (await fx.api.handle(
        new Request("http://localhost/v0/runtime/status", {
          headers: { authorization: `Bearer ${t.token}` },
        }),
        { remoteAddr: REMOTE },
      )).status;
    assert.equal(await ask(SHIFT), 200, "the second call's token is in force");
    assert.equal(await ask(BULK), 401, "the first call's token is not");
    assert.deepEqual(a.changes?.added, [{ name: "bulk", role: "viewer" }]);
    assert.deepEqual(b.changes?.added, [{ name: "shift", role: "operator" }]);
    assert.deepEqual(b.changes?.removed, [{ name: "bulk", role: "viewer" }]);
  } finally {
    digests.restore();
    await fx.close();
  }
});
