/**
 * src/provider_sdk/README.md cannot rot: its lamp is examples/providers/lamp/lamp.ts word for word
 * and runs under the real runtime with examples/providers/lamp/lamp.yaml; its relay-board example
 * is written out as a file and run as a real child process with every verb of the executable
 * profile, and what the README shows it printing is what it prints.
 */
import assert from "node:assert/strict";
import {
  mirrorOptions,
  startRuntimeChildOnFreePort,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { SimProcess } from "../sim/_sim_process.ts";
import { WireValueType } from "../../src/provider_sdk/mod.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const README = "src/provider_sdk/README.md";
/** Bound on waiting for the runtime to have polled a new value. */
const POLL_WAIT_MS = 10_000;
/** The chip the README's --check-host example lacks. */
const MISSING_CHIP = "/dev/gpiochip7";

const readme = await Deno.readTextFile(`${REPO}${README}`);

/** The fenced block right after `<!-- sdk-example: NAME -->`. */
function example(name: string): string {
  const m = readme.match(
    new RegExp(
      `<!-- sdk-example: ${name.replaceAll(".", "\\.")} -->\\n\\n\`\`\`ts\\n([^]*?)\`\`\`\\n`,
    ),
  );
  assert.ok(m, `${README}: no sdk-example ${name}`);
  return m[1]!;
}

/** The fenced block of `lang` after the paragraph containing `after`. */
function shown(after: string, lang: string): string {
  const at = readme.indexOf(after);
  assert.ok(at >= 0, `${README}: no '${after}'`);
  const m = readme.slice(at).match(new RegExp(`\`\`\`${lang}\\n([^]*?)\`\`\`\\n`));
  assert.ok(m, `${README}: no ${lang} block after '${after}'`);
  return m[1]!;
}

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

Deno.test("the README's lamp is examples/providers/lamp/lamp.ts word for word", async () => {
  assert.equal(
    example("examples/providers/lamp/lamp.ts"),
    await Deno.readTextFile(`${REPO}examples/providers/lamp/lamp.ts`),
  );
});

Deno.test("the README's lamp runs under the runtime: armed, switched on, read back, e-stopped off", async () => {
  // lamp.yaml as shipped, with the provider's path from the mirror's examples/ folder.
  const yaml = (await Deno.readTextFile(`${REPO}examples/providers/lamp/lamp.yaml`))
    .replace("args: [run, --quiet, lamp.ts]", "args: [run, --quiet, providers/lamp/lamp.ts]");
  assert.match(yaml, /providers\/lamp\/lamp\.ts/);
  await withCheckoutMirror(yaml, async (dir) => {
    const rt = await startRuntimeChildOnFreePort((port) => mirrorOptions(dir, port));
    try {
      const lampOn = async (want: boolean) => {
        const deadline = Date.now() + POLL_WAIT_MS;
        for (;;) {
          const r = await fetch(`${rt.base}/v0/state/lamp/lamp0`);
          const body = await r.json();
          const v = body.values?.find((x: { signal_id: string }) => x.signal_id === "on");
          if (v?.value?.bool === want) return;
          assert.ok(Date.now() < deadline, `lamp0/on never read ${want}: ${JSON.stringify(body)}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      assert.equal((await fetch(`${rt.base}/v0/mode`, json({ mode: "MANUAL" }))).status, 200);
      const call = await fetch(
        `${rt.base}/v0/call`,
        json({
          provider_id: "lamp",
          device_id: "lamp0",
          function_id: 1,
          args: { on: { type: "bool", bool: true } },
        }),
      );
      assert.equal(call.status, 200, await call.text());
      await lampOn(true);
      const estop = await (await fetch(`${rt.base}/v0/estop`, { method: "POST" })).json();
      assert.equal(estop.latched, true);
      assert.equal(estop.software_safe_state, "hooks");
      await lampOn(false);
      assert.match(rt.stderr(), /\[provider\/lamp\] stderr: INFO \[lamp\] lamp0 on/);
    } finally {
      assert.equal(await rt.stop(), 0);
    }
  });
});

Deno.test("the README's relay board answers every verb as the README shows", async () => {
  await assert.rejects(Deno.stat(MISSING_CHIP), Deno.errors.NotFound, `${MISSING_CHIP} exists`);
  await withCheckoutMirror("runtime: { name: unused }\n", async (dir) => {
    const root = dir.replace(/\/examples$/, "");
    const module = `${dir}/relays.ts`;
    await Deno.writeTextFile(module, example("relays"));
    const config = async (name: string, body: unknown) => {
      const path = `${dir}/${name}.json`;
      await Deno.writeTextFile(path, JSON.stringify(body));
      return path;
    };
    const run = async (args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        // -A: Deno lets a program look at most of /dev/ only with every permission (README).
        args: ["run", "--quiet", "-A", module, ...args],
        cwd: root,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
    };

    // --config-schema: the documented lines, then the schema's own.
    const schema = await run(["--config-schema"]);
    assert.equal(schema.code, 0, schema.stderr);
    const documented = shown("relays --config-schema", "json").split("\u2026")[0];
    assert.ok(
      schema.stdout.startsWith(documented!),
      `${schema.stdout}\ndoes not start with\n${documented}`,
    );
    const doc = JSON.parse(schema.stdout);
    assert.deepEqual(Object.keys(doc), [
      "config_schema_version",
      "provider",
      "provider_version",
      "schema",
    ]);
    assert.deepEqual(doc.schema.required, ["chip", "relays"]);

    // --check-host: unmet exactly as documented (exit 1), met (exit 0), invalid (exit 2).
    const missing = await config("missing", { chip: MISSING_CHIP, relays: 2 });
    const unmet = await run(["--check-host", missing]);
    assert.equal(unmet.code, 1, unmet.stderr);
    assert.equal(unmet.stdout, shown("relays --check-host relays.json", "text"));
    const present = await config("present", { chip: "/dev/null", relays: 2 });
    const met = await run(["--check-host", present]);
    assert.equal(met.code, 0, met.stderr);
    assert.equal(JSON.parse(met.stdout).requirements[0].status, "met");
    const invalid = await run(["--check-host", await config("invalid", { chip: "x", relays: 9 })]);
    assert.equal(invalid.code, 2);
    assert.equal(invalid.stdout, "");
    assert.match(invalid.stderr, /config: chip: must be a device node under \/dev\//);
    assert.match(invalid.stderr, /config: relays: must be an integer from 1 to 8/);
    assert.equal((await run(["--check-config", present])).code, 0);
    assert.equal((await run(["--version"])).stdout, "1.0.0\n");

    // --config with the chip missing: up, not ready, as the README describes.
    const notReady = SimProcess.startModule(module, ["--config", missing], root, ["-A"]);
    try {
      const ready = await notReady.request({ wait_ready: {} });
      const { init_time_ms, ...diagnostics } = ready.wait_ready?.diagnostics ?? {};
      assert.match(init_time_ms!, /^\d+$/, "the profile's required init_time_ms");
      assert.deepEqual(diagnostics, {
        host_check: "unmet",
        host_unmet: `gpio.chip_present: ${MISSING_CHIP} does not exist`,
        ready: "false",
      });
      assert.deepEqual(
        (await notReady.request({ list_devices: {} })).list_devices?.devices ?? [],
        [],
      );
      const warned = await notReady.waitForStderr(/host requirements unmet/);
      const readmeWords = readme.replace(/\s+/g, " ");
      assert.ok(
        readmeWords.includes(warned.replace(/\s+/g, " ")),
        `README does not show: ${warned}`,
      );
      await notReady.closeStdin();
      assert.equal(await notReady.exitCode(), 0);
    } finally {
      await notReady.stop();
    }

    // --config with the chip there: two relays that switch.
    const ok = SimProcess.startModule(module, ["--config", present], root, ["-A"]);
    try {
      const list = await ok.request({ list_devices: {} });
      assert.deepEqual(list.list_devices?.devices?.map((d) => d.device_id), ["relay0", "relay1"]);
      const call = await ok.request({
        call: {
          device_id: "relay1",
          function_id: 1,
          args: { on: { type: WireValueType.BOOL, bool_value: true } },
        },
      });
      assert.equal(call.status?.code, 1, call.status?.message);
      const read = await ok.request({ read_signals: { device_id: "relay1" } });
      assert.equal(read.read_signals?.values?.[0]?.value?.bool_value, true);
    } finally {
      await ok.stop();
    }
  });
});
