/**
 * A client generated from GET /v0/openapi.json works: npm openapi-typescript (its library API)
 * turns the document the runtime serves into TypeScript types, a small program calls a real runtime
 * (the demo with the simulated provider, a child process) through npm openapi-fetch with those
 * types, and `deno check` type-checks it against them. A program that sends a wrongly typed body
 * does not type-check. Both packages are test-only (deno.json imports, locked in deno.lock); src/
 * imports neither.
 */
import assert from "node:assert/strict";
import openapiTS, { astToString } from "openapi-typescript";
import { startRuntimeInMirror, withCheckoutMirror } from "../helpers/runtime_process.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

const REPO = new URL("../../", import.meta.url).pathname;

/** The program that uses the generated client; `{ base }` is the runtime's URL. */
const CLIENT = `import createClient from "openapi-fetch";
import type { paths } from "./api.ts";

const client = createClient<paths>({ baseUrl: Deno.args[0]! });
const status = await client.GET("/v0/runtime/status");
if (status.data === undefined) throw new Error("runtime/status: " + JSON.stringify(status.error));
const mode: "MANUAL" | "AUTO" | "IDLE" | "FAULT" = status.data.mode;
const armed = await client.POST("/v0/mode", { body: { mode: "MANUAL" } });
const call = await client.POST("/v0/call", {
  body: {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.2 } },
  },
});
const caps = await client.GET("/v0/devices/{provider_id}/{device_id}/capabilities", {
  params: { path: { provider_id: "sim0", device_id: "motorctl0" } },
});
const refused = await client.POST("/v0/call", {
  body: { provider_id: "sim0", device_id: "nope", function_id: 10 },
});
console.log(JSON.stringify({
  version: status.data.version,
  mode,
  armed: armed.data?.mode,
  called: call.data?.post_call_poll_triggered,
  function: caps.data?.capabilities.functions[0]?.name,
  refused: refused.error?.status.code,
}));
`;

/** A program whose call body has a string function_id: the generated types must refuse it. */
const WRONG = `import createClient from "openapi-fetch";
import type { paths } from "./api.ts";

const client = createClient<paths>({ baseUrl: "http://127.0.0.1:1" });
await client.POST("/v0/call", {
  body: { provider_id: "sim0", device_id: "motorctl0", function_id: "10" },
});
`;

async function deno(
  args: string[],
  cwd: string,
): Promise<{ ok: boolean; out: string; stdout: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  const stdout = text.decode(r.stdout);
  return { ok: r.success, out: stdout + text.decode(r.stderr), stdout };
}

Deno.test("a client generated from GET /v0/openapi.json type-checks and calls a real runtime", async () => {
  const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
  await withCheckoutMirror(demo, async (dir) => {
    const rt = await startRuntimeInMirror(dir);
    try {
      const doc = await (await apiFetch(`${rt.base}/v0/openapi.json`)).json();
      const types = astToString(await openapiTS(doc));
      assert.match(types, /"\/v0\/call": \{/);
      const work = await Deno.makeTempDir({ dir, prefix: "client-" });
      await Deno.writeTextFile(`${work}/api.ts`, types);
      await Deno.writeTextFile(`${work}/client.ts`, CLIENT);
      await Deno.writeTextFile(`${work}/wrong.ts`, WRONG);
      const config = `${REPO}deno.json`;

      const wrong = await deno(["check", "--frozen", "--config", config, "wrong.ts"], work);
      assert.equal(wrong.ok, false, "a string function_id does not type-check");
      assert.match(wrong.out, /function_id/);

      const run = await deno(
        [
          "run",
          "--check",
          "--frozen",
          "--config",
          config,
          `--allow-net=127.0.0.1`,
          "client.ts",
          rt.base,
        ],
        work,
      );
      assert.ok(run.ok, run.out);
      assert.deepEqual(JSON.parse(run.stdout), {
        version: doc.info.version,
        mode: "IDLE",
        armed: "MANUAL",
        called: true,
        function: "set_motor_duty",
        refused: "NOT_FOUND",
      });
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  });
});
