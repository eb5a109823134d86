/** A config file that is not UTF-8 is an error at the first bad byte (its line and column). */
import assert from "node:assert/strict";
import { type Diagnostic, loadConfig } from "../../src/config/mod.ts";
import { CONFIG_PATH, PROV } from "./_helpers.ts";

function loadBytes(bytes: Uint8Array) {
  return loadConfig(bytes, {
    path: CONFIG_PATH,
    mode: "check",
    env: {},
    fileExists: () => true,
    commandExists: () => true,
    cwd: "/var/lib/rig",
  });
}

/** `prefix` as UTF-8, then `bad` raw bytes, then `suffix` as UTF-8. */
function bytesOf(prefix: string, bad: number[], suffix = ""): Uint8Array {
  const enc = new TextEncoder();
  return new Uint8Array([...enc.encode(prefix), ...bad, ...enc.encode(suffix)]);
}

function where(d: Diagnostic): string {
  return `${d.line}:${d.column} ${d.severity} ${d.path}`;
}

const CASES: { name: string; bytes: Uint8Array; at: string; offset: number }[] = [
  {
    name: "a Latin-1 byte in a value",
    bytes: bytesOf(`${PROV}\nruntime:\n  name: caf`, [0xe9], "\n"),
    at: "3:12",
    offset: PROV.length + 1 + 9 + 11,
  },
  {
    name: "a stray continuation byte at the start of a line",
    bytes: bytesOf(`${PROV}\n`, [0x80], "x: 1\n"),
    at: "2:1",
    offset: PROV.length + 1,
  },
  {
    name: "a byte after multi-byte characters (column counts characters, not bytes)",
    bytes: bytesOf(`runtime:\n  name: "ééé`, [0xff], `"\n${PROV}\n`),
    at: "2:13",
    offset: 9 + 9 + 6,
  },
  {
    name: "an overlong encoding",
    bytes: bytesOf("# ", [0xc0, 0xaf], `\n${PROV}\n`),
    at: "1:3",
    offset: 2,
  },
  {
    name: "an encoded UTF-16 surrogate",
    bytes: bytesOf("# ", [0xed, 0xa0, 0x80], `\n${PROV}\n`),
    at: "1:3",
    offset: 2,
  },
  {
    name: "a sequence truncated at the end of the file",
    bytes: bytesOf(`${PROV}\n# `, [0xe2, 0x82]),
    at: "2:3",
    offset: PROV.length + 3,
  },
];

for (const c of CASES) {
  Deno.test(`loadConfig reports ${c.name} as not UTF-8 with its line and column`, () => {
    const { config, diagnostics } = loadBytes(c.bytes);
    assert.equal(config, null);
    assert.deepEqual(diagnostics.map(where), [`${c.at} error `]);
    assert.equal(
      diagnostics[0]!.message,
      `the file is not valid UTF-8: invalid byte at byte offset ${c.offset} (save the file as UTF-8)`,
    );
    assert.ok(!diagnostics[0]!.message.includes("\ufffd"));
  });
}

Deno.test("loadConfig accepts UTF-8 bytes, with or without a byte-order mark", () => {
  const text = `runtime:\n  name: "Prüfstand ✓ 🚀"\n${PROV}\n`;
  for (const bom of [[], [0xef, 0xbb, 0xbf]]) {
    const { config, diagnostics } = loadBytes(bytesOf("", bom, text));
    assert.deepEqual(diagnostics, []);
    assert.equal(config?.runtime.name, "Prüfstand ✓ 🚀");
  }
});

Deno.test("loadConfig positions an error after a byte-order mark like one without", () => {
  const bad = `runtime:\n  name: 5\n${PROV}\n`;
  const plain = loadBytes(bytesOf("", [], bad)).diagnostics.map(where);
  const withBom = loadBytes(bytesOf("", [0xef, 0xbb, 0xbf], bad)).diagnostics.map(where);
  assert.deepEqual(plain, ["2:3 error runtime.name"]);
  assert.deepEqual(withBom, plain);
});
