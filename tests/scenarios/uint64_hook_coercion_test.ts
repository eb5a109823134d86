/**
 * Argument coercion as anolis 0.1.41 does it (anolishq/anolis core/control/call_router.cpp,
 * CallRouter::coerce_arguments), end to end: a YAML integer in a safe-state hook (which arrives as
 * an int64) reaches a provider's uint64 and double arguments; an int64 sent over HTTP to a uint64
 * argument is widened; a negative one is refused naming the argument. The runtime and the provider
 * (tests/control/_uint64_provider.ts) are real child processes.
 */
import assert from "node:assert/strict";
import { startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const PROVIDER = `${REPO}tests/control/_uint64_provider.ts`;
/** Bound on waiting for the runtime to have polled a new value. */
const POLL_WAIT_MS = 10_000;

const post = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

Deno.test("a YAML integer in a safe-state hook reaches a uint64 and a double argument; HTTP int64 widens to uint64", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uint64-hook-" });
  await Deno.writeTextFile(
    `${dir}/config.yaml`,
    `runtime: { name: coerce }
polling: { interval_ms: 100 }
providers:
  - id: pwm
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --config, ${REPO}deno.json, --allow-read, --allow-env, ${PROVIDER}]
safety:
  safe_state:
    hooks:
      - device_handle: pwm/pwm0
        function_name: set_output
        args: { duty: 0, level: 0 } # YAML integers: int64 until the ArgSpec says otherwise
`,
  );
  const rt = await startRuntimeChildOnFreePort((port) => ({
    config: `${dir}/config.yaml`,
    port,
    args: ["--port", String(port)],
    cwd: dir,
  }));
  try {
    const output = async (want: { duty: number; level: number }) => {
      const deadline = Date.now() + POLL_WAIT_MS;
      for (;;) {
        const body = await (await fetch(`${rt.base}/v0/state/pwm/pwm0`)).json();
        const get = (id: string) =>
          body.values?.find((v: { signal_id: string }) => v.signal_id === id)?.value;
        const duty = get("duty");
        const level = get("level");
        if (duty?.uint64 === want.duty && level?.double === want.level) {
          assert.equal(duty.type, "uint64");
          assert.equal(level.type, "double");
          return;
        }
        assert.ok(
          Date.now() < deadline,
          `never read ${JSON.stringify(want)}: ${JSON.stringify(body)}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    assert.equal((await fetch(`${rt.base}/v0/mode`, post({ mode: "MANUAL" }))).status, 200);

    const call = (duty: unknown, level: unknown) =>
      fetch(
        `${rt.base}/v0/call`,
        post({ provider_id: "pwm", device_id: "pwm0", function_id: 1, args: { duty, level } }),
      );
    const widened = await call({ type: "int64", int64: 200 }, { type: "int64", int64: 3 });
    assert.equal(widened.status, 200, await widened.text());
    await output({ duty: 200, level: 3 });

    const negative = await call({ type: "int64", int64: -1 }, { type: "double", double: 1 });
    assert.equal(negative.status, 400);
    const refused = await negative.json();
    assert.equal(refused.status.code, "INVALID_ARGUMENT");
    assert.match(refused.status.message, /args\.duty: -1 does not fit uint64/);
    await output({ duty: 200, level: 3 });

    const estop = await (await fetch(`${rt.base}/v0/estop`, { method: "POST" })).json();
    assert.equal(estop.software_safe_state, "hooks");
    assert.deepEqual(
      estop.actions.map((a: { success: boolean; error?: string }) => [a.success, a.error]),
      [[true, undefined]],
    );
    await output({ duty: 0, level: 0 });
  } finally {
    assert.equal(await rt.stop(), 0);
    await Deno.remove(dir, { recursive: true });
  }
});
