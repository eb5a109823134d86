/**
 * The file paths an `<include path>` makes (the tree file's text, any length, a line break in it
 * written `&#10;`) are named in the parse's diagnostics cut to TREE_FILE_SHOWN_CHARS with their
 * control characters escaped, the read's error (which may repeat the path) cut too, and an include
 * cycle names at most MAX_NAMED_IN_WARNING files: no diagnostic of 10 kB, none that breaks a line.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { MAX_NAMED_IN_WARNING } from "../../../src/common/mod.ts";
import {
  parseBehaviorTree,
  TREE_FILE_SHOWN_CHARS,
  TREE_READ_ERROR_SHOWN_CHARS,
} from "../../../src/automation/bt/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

const LONG = 10_000;
/** Longest message any of these may make (a few paths, each cut). */
const MAX_MESSAGE_CHARS = 1_000;

const MAIN = `<BehaviorTree ID="Main"><AlwaysSuccess/></BehaviorTree>`;

/** The parse's error messages of `files`, from /bt/main.xml. */
function errors(files: Record<string, string>): string[] {
  return parseBehaviorTree("/bt/main.xml", memFiles(files)).diagnostics
    .filter((d) => d.severity === "error").map((d) => d.message);
}

function bounded(m: string): void {
  ok(m.length <= MAX_MESSAGE_CHARS, `${m.length} chars: ${m.slice(0, 400)}`);
  // deno-lint-ignore no-control-regex
  ok(!/[\x00-\x1f]/.test(m), m.slice(0, 400));
}

Deno.test("parseBehaviorTree names an unreadable 10 kB include path cut and escaped, its read error cut", () => {
  const [m, ...rest] = errors({
    "/bt/main.xml": xmlRoot(`<include path="x&#10;${"p".repeat(LONG)}.xml"/>\n${MAIN}`, "Main"),
  });
  deepStrictEqual(rest, []);
  bounded(m!);
  // The path as the message names it: its first TREE_FILE_SHOWN_CHARS, the line break escaped.
  const path = `/bt/x\\n${"p".repeat(TREE_FILE_SHOWN_CHARS - "/bt/x\n".length)}\u2026`;
  // memFiles' error repeats the path: cut to TREE_READ_ERROR_SHOWN_CHARS.
  const why = `No such file: /bt/x\\n${
    "p".repeat(TREE_READ_ERROR_SHOWN_CHARS - "No such file: /bt/x\n".length)
  }\u2026`;
  equal(m, `cannot read included file ${path}: ${why}`);
  // A short path reads as before.
  deepStrictEqual(
    errors({ "/bt/main.xml": xmlRoot(`<include path="gone.xml"/>\n${MAIN}`, "Main") }),
    [
      "cannot read included file /bt/gone.xml: No such file: /bt/gone.xml",
    ],
  );
});

Deno.test("parseBehaviorTree names an include cycle of 10 kB paths cut", () => {
  const a = `/bt/${"a".repeat(LONG)}.xml`;
  const b = `/bt/${"b".repeat(LONG)}.xml`;
  const [m, ...rest] = errors({
    "/bt/main.xml": xmlRoot(`<include path="${a}"/>\n${MAIN}`, "Main"),
    [a]: xmlRoot(`<include path="${b}"/>`),
    [b]: xmlRoot(`<include path="${a}"/>`),
  });
  deepStrictEqual(rest, []);
  bounded(m!);
  const cut = (p: string) => `${p.slice(0, TREE_FILE_SHOWN_CHARS)}\u2026`;
  equal(m, `include cycle: ${cut(a)} -> ${cut(b)} -> ${cut(a)}`);
});

Deno.test("parseBehaviorTree names at most MAX_NAMED_IN_WARNING files of a long include cycle", () => {
  const n = 300;
  const file = (i: number) => `/bt/f${i}.xml`;
  const files: Record<string, string> = {
    "/bt/main.xml": xmlRoot(`<include path="f0.xml"/>\n${MAIN}`, "Main"),
  };
  for (let i = 0; i < n; i++) files[file(i)] = xmlRoot(`<include path="f${(i + 1) % n}.xml"/>`);
  const [m, ...rest] = errors(files);
  deepStrictEqual(rest, []);
  bounded(m!);
  const shown = Array.from({ length: MAX_NAMED_IN_WARNING }, (_, i) => file(i)).join(" -> ");
  equal(m, `include cycle: ${shown} -> (${n - MAX_NAMED_IN_WARNING} more) -> ${file(0)}`);
  // A short cycle reads as before.
  deepStrictEqual(
    errors({
      "/bt/main.xml": xmlRoot(`<include path="a.xml"/>\n${MAIN}`, "Main"),
      "/bt/a.xml": xmlRoot(`<include path="b.xml"/>`),
      "/bt/b.xml": xmlRoot(`<include path="a.xml"/>`),
    }),
    ["include cycle: /bt/a.xml -> /bt/b.xml -> /bt/a.xml"],
  );
});
