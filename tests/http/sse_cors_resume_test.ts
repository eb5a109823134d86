/**
 * A web page of another origin with a CORS grant resumes the event stream the way
 * docs/http-api.md "Resuming a stream" says: a `fetch` carrying the bearer token (an `EventSource`
 * cannot send one) and the id it saw last in `Last-Event-ID`. Both headers make the browser send a
 * preflight first; the stream resumes only when the preflight allows both. Real Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  type ChromiumSession,
  openChromium,
  type PageGlobal,
} from "../helpers/browser.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const TOKEN = "cors-resume-token-5b1e";

Deno.test({
  name: "GET /v0/events from a granted foreign origin resumes with Authorization and Last-Event-ID",
  ignore: chromiumMissing(),
  fn: async () => {
    // The page's origin: a second server on another port (another origin to the browser).
    const page = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () =>
        new Response("<!doctype html><title>page</title>", {
          headers: { "content-type": "text/html" },
        }),
    );
    const pageOrigin = `http://127.0.0.1:${page.addr.port}`;
    const fx = await startHttpFixture({
      config: {
        pollingIntervalMs: 100,
        http: {
          corsAllowedOrigins: [pageOrigin],
          authEnabled: true,
          authToken: TOKEN,
          authExemptLoopback: false,
        },
      },
      api: { apiToken: TOKEN },
    });
    let browser: ChromiumSession | null = null;
    try {
      const server = await fx.serve();
      browser = await openChromium();
      const tab = await browser.newPage();
      await tab.goto(pageOrigin);
      const result = await tab.evaluate(
        async ({ api, token }: { api: string; token: string }) => {
          const g: PageGlobal = globalThis;
          /** The id of the first frame a stream opened with `headers` sends. */
          const firstId = async (headers: Record<string, string>): Promise<string> => {
            const ctl = new g.AbortController();
            const res = await g.fetch(`${api}/v0/events`, { headers, signal: ctl.signal });
            if (res.status !== 200) throw new Error(`status ${res.status}`);
            const reader = res.body.getReader();
            const dec = new g.TextDecoder();
            let text = "";
            try {
              for (;;) {
                const { value, done } = await reader.read();
                if (done) throw new Error("stream ended");
                text += dec.decode(value, { stream: true });
                const m = /^id: (\S+)$/m.exec(text);
                if (m) return m[1]!;
              }
            } finally {
              ctl.abort();
            }
          };
          const auth = { authorization: `Bearer ${token}` };
          const first = await firstId(auth);
          try {
            const resumed = await firstId({ ...auth, "last-event-id": first });
            return { first, resumed, error: "" };
          } catch (e) {
            return { first, resumed: "", error: String(e) };
          }
        },
        { api: `http://127.0.0.1:${server.port}`, token: TOKEN },
      );
      assert.equal(result.error, "", "the resuming fetch passed its preflight");
      const n = (id: string) => Number(id.split("-")[1]);
      assert.equal(n(result.resumed), n(result.first) + 1, "resumed right after the id it sent");
    } finally {
      await browser?.close();
      await fx.close();
      await page.shutdown();
    }
  },
});
