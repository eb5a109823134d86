import assert from "node:assert/strict";
import { formatDiagnostic } from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

Deno.test("formatDiagnostic keeps a diagnostic on one line when it quotes a value with a newline", () => {
  // A block scalar keeps its line break: the message quotes `0.0.0.0` and that newline.
  const { diagnostics } = load(`${PROV}\nhttp:\n  bind: |\n    0.0.0.0\n`);
  const d = diagnostics.find((x) => x.path === "http.bind" && x.severity === "error");
  assert.ok(d, JSON.stringify(diagnostics));
  const line = formatDiagnostic(d);
  assert.doesNotMatch(line, /[\r\n]/);
  assert.match(line, /^\/etc\/rig\/runtime\.yaml:3:3: error: http\.bind: "0\.0\.0\.0\\n" is not/);
});

Deno.test("formatDiagnostic shows a control character in a key as an escape, not raw", () => {
  // An ESC pasted into a key would reach the terminal that runs --check-config.
  const { diagnostics } = load(`${PROV}\npolling:\n  "interval\\e[2J": 5\n`);
  const d = diagnostics.find((x) => x.path.startsWith("polling."));
  assert.ok(d, JSON.stringify(diagnostics));
  const line = formatDiagnostic(d);
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(line, /[\x00-\x08\x0a-\x1f\x7f]/);
  assert.match(line, /polling\.interval\\x1b\[2J: unknown key 'interval\\x1b\[2J'/);
});
