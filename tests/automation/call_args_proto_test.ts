/**
 * A tree's CallDevice argument named `__proto__` stays an argument (the declaration check then
 * refuses it as unknown) even in a Deno run with `--unsafe-proto`, where assigning `__proto__` on
 * a plain object sets its prototype and the argument would silently vanish. Run in a child Deno
 * with that flag: this test process has Deno's default (`__proto__` disabled).
 */
import assert from "node:assert/strict";

const CALL_ARGS = new URL("../../src/automation/call_args.ts", import.meta.url).href;

Deno.test("parseCallArgs keeps an argument named __proto__ under --unsafe-proto", async () => {
  const script = `import { parseCallArgs } from ${JSON.stringify(CALL_ARGS)};
const r = parseCallArgs('{"__proto__": 1, "duty": 0.5}');
console.log(JSON.stringify(r.ok ? Object.keys(r.args) : r));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--unsafe-proto", "--no-config", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), ["__proto__", "duty"]);
});
