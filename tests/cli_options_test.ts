/**
 * The command line's options as parseCli reads them (src/main.ts's own reader, which replaced
 * node:util's parseArgs): both option forms, the short -h, the last of a repeated option, and a
 * usage error naming the argument for everything else. The process-level exits are cli_test.ts's.
 */
import assert from "node:assert/strict";
import { parseCli } from "../src/main.ts";

Deno.test("parseCli reads --name VALUE and --name=VALUE, -h and --help, and the last of a repeated option", () => {
  assert.deepEqual(parseCli(["--config", "a.yaml"]), {
    kind: "start",
    file: "a.yaml",
    logLevel: null,
    port: null,
  });
  assert.deepEqual(parseCli(["--config=a=b.yaml", "--port=8081", "--log-level", "debug"]), {
    kind: "start",
    file: "a=b.yaml",
    logLevel: "debug",
    port: 8081,
  });
  assert.deepEqual(parseCli(["--config", "a.yaml", "--config", "b.yaml"]), {
    kind: "start",
    file: "b.yaml",
    logLevel: null,
    port: null,
  });
  assert.deepEqual(parseCli(["--check-config", "c.yaml", "--strict", "--format", "json"]), {
    kind: "check",
    file: "c.yaml",
    format: "json",
    strict: true,
  });
  assert.deepEqual(parseCli(["-h"]), { kind: "help" });
  assert.deepEqual(parseCli(["--help"]), { kind: "help" });
  assert.deepEqual(parseCli(["--version"]), { kind: "version" });
  assert.deepEqual(parseCli(["--config=-odd.yaml"]), {
    kind: "start",
    file: "-odd.yaml",
    logLevel: null,
    port: null,
  });
  assert.deepEqual(parseCli(["--config", "-"]), {
    kind: "start",
    file: "-",
    logLevel: null,
    port: null,
  });
});

Deno.test("parseCli names the argument it refuses", () => {
  const cases: [string[], string][] = [
    [["--frobnicate"], "Unknown option '--frobnicate'"],
    [["--frobnicate=1"], "Unknown option '--frobnicate'"],
    [["-x"], "Unknown option '-x'"],
    [["--config"], "Option '--config <value>' argument missing"],
    [
      ["--config", "--port", "1"],
      "Option '--config' is followed by '--port', not a value (a value that starts with a dash: " +
      "--config=--port)",
    ],
    [["--check-config", "c.yaml", "--strict=yes"], "Option '--strict' takes no value"],
    [["a.yaml"], "Unexpected argument 'a.yaml': this command takes no positional arguments"],
    [
      ["--config", "a.yaml", "--", "b"],
      "Unexpected argument '--': this command takes no positional arguments",
    ],
  ];
  for (const [argv, message] of cases) {
    assert.deepEqual(parseCli(argv), { kind: "usage-error", message }, argv.join(" "));
  }
});
