/**
 * docs/migrating-from-anolis.md stays true to the code: every test it names exists and has that
 * name, every row of its difference tables names what shows it, its links resolve, it covers every
 * exit code and every telemetry measurement, and the README links to it. Its `$` examples run
 * against the demo in doc_examples_test.ts.
 */
import assert from "node:assert/strict";
import { EXIT_CODE_DESCRIPTIONS } from "../../src/app/exit_codes.ts";
import { MEASUREMENT_NAMES, type MeasurementNames } from "../../src/telemetry/mod.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const GUIDE = "docs/migrating-from-anolis.md";
const text = await Deno.readTextFile(`${REPO}${GUIDE}`);

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to `-`, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** `tests/….ts` followed by one or more "test names" (quoted). */
function testReferences(s: string): { file: string; names: string[] }[] {
  const out: { file: string; names: string[] }[] = [];
  for (const m of s.matchAll(/`(tests\/[\w/.-]+\.ts)`((?:\s*"[^"]+")*)/g)) {
    out.push({ file: m[1]!, names: [...m[2]!.matchAll(/"([^"]+)"/g)].map((n) => n[1]!) });
  }
  return out;
}

Deno.test("docs/migrating-from-anolis.md names only tests that exist, by their names", async () => {
  // Prose wraps names across lines: references are read from the text with newlines joined.
  const refs = testReferences(text.replace(/\n/g, " "));
  assert.ok(refs.length >= 60, `only ${refs.length} test references`);
  const problems: string[] = [];
  for (const { file, names } of refs) {
    let source: string;
    try {
      source = await Deno.readTextFile(`${REPO}${file}`);
    } catch {
      problems.push(`${file}: no such file`);
      continue;
    }
    if (!/(Deno\.test|t\.step)\(/.test(source)) problems.push(`${file}: holds no test`);
    for (const name of names) {
      if (!source.includes(name)) problems.push(`${file}: no test named "${name}"`);
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("every row of the guide's difference tables says what shows it, and its links resolve", async () => {
  const own = anchors(text);
  const problems: string[] = [];
  let rows = 0;
  let shownBy = -1;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      shownBy = -1;
      continue;
    }
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    if (cells.includes("shown by")) {
      shownBy = cells.indexOf("shown by");
      continue;
    }
    if (shownBy < 0 || /^-+$/.test(cells[0]!)) continue;
    rows++;
    const cell = cells[shownBy] ?? "";
    if (testReferences(cell).length === 0 && !/\]\([^)]*#[^)]+\)/.test(cell)) {
      problems.push(`row without a test or example: ${cells[0]}`);
    }
  }
  assert.ok(rows >= 45, `only ${rows} rows`);
  for (const m of text.matchAll(/\]\(([^)]+)\)/g)) {
    const [path, anchor] = m[1]!.split("#");
    if (/^https?:/.test(path!)) continue;
    if (path === "") {
      if (!own.has(anchor!)) problems.push(`no heading for #${anchor}`);
      continue;
    }
    const target = new URL(path!, `file://${REPO}docs/`).pathname;
    let doc: string;
    try {
      doc = await Deno.readTextFile(target);
    } catch {
      problems.push(`link to a missing file: ${m[1]}`);
      continue;
    }
    if (anchor && !anchors(doc).has(anchor)) problems.push(`no heading for ${m[1]}`);
  }
  assert.deepEqual(problems, []);
});

Deno.test("the guide covers every exit code, every telemetry measurement, the token and log phrases", async () => {
  for (const code of Object.keys(EXIT_CODE_DESCRIPTIONS)) {
    assert.match(text, new RegExp(`(^|[^0-9])${code} [a-z]`), `exit code ${code}`);
  }
  // One row per measurement: anolis's name, ours by default, ours with measurement_names: anolis.
  for (const key of Object.keys(MEASUREMENT_NAMES.runtime) as (keyof MeasurementNames)[]) {
    const ours = MEASUREMENT_NAMES.runtime[key];
    const asAnolis = MEASUREMENT_NAMES.anolis[key];
    const theirs = asAnolis === ours ? "—" : `\`${asAnolis}\``;
    const cells = [theirs, `\`${ours}\``, `\`${asAnolis}\``].map((c) =>
      c.replace(/[|`]/g, (x) => `\\${x}`)
    );
    assert.match(text, new RegExp(`\\| ${cells.join(" +\\| ")} +\\|`), ours);
  }
  assert.match(text, /telemetry\.measurement_names: anolis/);
  for (
    const phrase of [
      "Runtime Ready",
      "Runtime startup timeout exceeded",
      "Restart timeout exceeded for provider",
      "Ownership validation failed",
    ]
  ) {
    assert.ok(text.includes(phrase), phrase);
  }
  assert.match(text, /ANOLIS_API_TOKEN/);
  const readme = await Deno.readTextFile(`${REPO}README.md`);
  assert.match(readme, /\]\(docs\/migrating-from-anolis\.md\)/);
});
