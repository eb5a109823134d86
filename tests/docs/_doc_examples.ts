/**
 * Runs the captured `$ ...` examples of a document against the real demo (examples/demo.yaml
 * through src/main.ts, a child process on a free port) in document order, with real curl and
 * bash as a reader would, and compares each answer with the documented one:
 *
 * - JSON: the same members (an object without `…` must have exactly the documented members),
 *   the same value types, and the same values, except members that differ on every run
 *   (timestamps, ages, uptime, run ids, elapsed times: TYPE_ONLY), and measured doubles (more
 *   than SET_VALUE_DIGITS significant digits), which are compared by type. The tree digest is compared exactly: it is the SHA-256 of
 *   examples/behaviors/demo.xml, the same on every run, and a stale one is drift to catch. `…`
 *   stands for left-out members or items (the documented ones must then appear, in order);
 *   inside a string it stands for left-out text.
 * - `-i` output: the status code and every documented header (name and value).
 * - event streams (`-N`): every documented event, in order (others may come in between), with
 *   its data compared as JSON; the stream is ended as soon as they have all arrived. What an
 *   example says happens meanwhile is made by the test (STREAM_ACTIONS).
 * - `NAME=value` lines: evaluated by bash; a value that appears in the previous documented answer
 *   (a run id) is replaced by the value at the same place in the actual answer, in the variable
 *   and in every later documented answer (a message naming the run). `NAME=value` lines before
 *   a block's first `$` line are definitions a reader pastes; `B` must be the demo's address.
 *
 * A comment `<!-- doc-check: skip REASON -->` right before a block leaves it out (an example that
 * needs another provider); `<!-- doc-check: auth -->` runs it against a second demo with
 * `http.auth_enabled: true`, `http.auth_exempt_loopback: false` and RUNTIME_API_TOKEN set (in the
 * runtime's and in curl's environment). DOC_CHECK_SHOW=1 prints every actual answer.
 */
import assert from "node:assert/strict";
import {
  mirrorOptions,
  type RuntimeChild,
  startRuntimeChildOnFreePort,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { apiFetch, assertApiAnswer } from "../helpers/openapi_check.ts";

const REPO = new URL("../../", import.meta.url).pathname;
/** The demo's documented address; the test's own port replaces it. */
const DOC_BASE = "http://127.0.0.1:8080";
const TOKEN = "doc-check-token";
/** Bound on one example. */
const EXAMPLE_TIMEOUT_MS = 20000;
/** Bound on a stream example waiting for its documented events (the README's waits ~13 s). */
const STREAM_TIMEOUT_MS = 40000;
/** Members whose value differs on every run: compared by JSON type only. */
const TYPE_ONLY = new Set([
  "timestamp_ms",
  "uptime_seconds",
  "age_ms",
  "staleness_ms",
  "last_seen_ago_ms",
  "last_poll_ms",
  "elapsed_ms",
  "run_id",
  // history and incidents (docs/http-api.md "History and incidents")
  "t_ms",
  "since_ms",
  "until_ms",
  "memory_from_ms",
  "incident_id",
  "at_epoch_ms",
  "from_epoch_ms",
  "until_epoch_ms",
]);
/**
 * A documented `double` with more significant digits than this is a measurement (a temperature,
 * a speed: compared by type); one with at most this many is a value someone set (a duty, a
 * setpoint: compared exactly).
 */
const SET_VALUE_DIGITS = 6;
/** DOC_CHECK_SHOW=1 prints every actual answer (to update the document). */
const SHOW = Deno.env.get("DOC_CHECK_SHOW") === "1";
const typeOnly = (key: string | null) =>
  key !== null && (TYPE_ONLY.has(key) || key.endsWith("_epoch_ms"));

// ---- the document ----------------------------------------------------------------------------

interface Example {
  /** `FILE:LINE` of the `$` line. */
  readonly where: string;
  readonly line: number;
  readonly command: string;
  readonly output: string;
}

interface Block {
  readonly line: number;
  readonly directive: string | null;
  /** Lines of a block without `$ ` commands (variable definitions). */
  readonly setup: string[];
  readonly examples: Example[];
}

/** The ```sh blocks of the document with their `$ ` commands and documented outputs. */
function parseDoc(file: string, text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== "```sh") continue;
    const start = i;
    let directive: string | null = null;
    for (let k = i - 1; k >= 0 && k >= i - 2; k--) {
      const m = /^<!-- doc-check: (.*) -->$/.exec(lines[k]!);
      if (m) directive = m[1]!.trim();
    }
    const body: { text: string; line: number }[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== "```"; i++) {
      body.push({ text: lines[i]!, line: i + 1 });
    }
    const examples: Example[] = [];
    const setup: string[] = [];
    let current: { line: number; command: string; output: string[] } | null = null;
    const flush = () => {
      if (!current) return;
      while (current.output.length > 0 && current.output.at(-1)!.trim() === "") {
        current.output.pop();
      }
      examples.push({
        ...current,
        where: `${file}:${current.line}`,
        output: current.output.join("\n"),
      });
      current = null;
    };
    for (let k = 0; k < body.length; k++) {
      const { text: l, line } = body[k]!;
      if (l.startsWith("$ ")) {
        flush();
        let command = l.slice(2);
        while (command.endsWith("\\") && k + 1 < body.length) {
          command = `${command.slice(0, -1)} ${body[++k]!.text.trim()}`;
        }
        current = { line, command, output: [] };
      } else if (current) {
        (current as { output: string[] }).output.push(l);
      } else if (l.trim()) {
        setup.push(l);
      }
    }
    flush();
    blocks.push({ line: start + 1, directive, setup, examples });
  }
  return blocks;
}

// ---- documented JSON with `…` ----------------------------------------------------------------

type DocValue =
  | { t: "obj"; entries: [string, DocValue][]; open: boolean }
  | { t: "arr"; items: DocValue[]; open: boolean }
  | { t: "str"; v: string }
  | { t: "num"; v: number; raw: string }
  | { t: "bool"; v: boolean }
  | { t: "null" };

const ELLIPSIS = "…";

/** Parses documented JSON in which `…` may stand for left-out members, items or text. */
function parseDocJson(text: string): DocValue {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`documented JSON: ${what} at offset ${i}: ${text.slice(i, i + 40)}`);
  };
  const value = (): DocValue => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const entries: [string, DocValue][] = [];
      let open = false;
      for (;;) {
        ws();
        if (text[i] === "}") {
          i++;
          return { t: "obj", entries, open };
        }
        if (text[i] === ELLIPSIS) {
          i++;
          open = true;
        } else {
          const key = string();
          ws();
          if (text[i++] !== ":") fail("expected ':'");
          entries.push([key, value()]);
        }
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== "}") fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const items: DocValue[] = [];
      let open = false;
      for (;;) {
        ws();
        if (text[i] === "]") {
          i++;
          return { t: "arr", items, open };
        }
        if (text[i] === ELLIPSIS) {
          i++;
          open = true;
        } else {
          items.push(value());
        }
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== "]") fail("expected ',' or ']'");
      }
    }
    if (c === '"') return { t: "str", v: string() };
    const m = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i));
    if (!m) return fail("unexpected text");
    i += m[0].length;
    if (m[0] === "true" || m[0] === "false") return { t: "bool", v: m[0] === "true" };
    if (m[0] === "null") return { t: "null" };
    return { t: "num", v: Number(m[0]), raw: m[0] };
  };
  const string = (): string => {
    if (text[i] !== '"') fail("expected a string");
    let j = i + 1;
    while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
    const s = JSON.parse(text.slice(i, j + 1)) as string;
    i = j + 1;
    return s;
  };
  const v = value();
  ws();
  if (i !== text.length) fail("text after the value");
  return v;
}

/** Significant digits of a JSON number as written (`0.40` -> 2, `23.939484125736353` -> 17). */
function significantDigits(raw: string): number {
  const digits = raw.replace(/^-/, "").replace(/[eE].*$/, "").replace(".", "");
  return digits.replace(/^0+/, "").replace(/0+$/, "").length;
}

function kind(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

const DOC_KIND = {
  obj: "object",
  arr: "array",
  str: "string",
  num: "number",
  bool: "boolean",
  null: "null",
} as const;

/** Throws naming the first place where `actual` differs from the documented value. */
function compareJson(doc: DocValue, actual: unknown, path: string, key: string | null): void {
  const got = kind(actual);
  if (DOC_KIND[doc.t] !== got) {
    throw new Error(`${path}: documented ${DOC_KIND[doc.t]}, got ${got} ${short(actual)}`);
  }
  if (typeOnly(key)) return;
  if (key === "double" && doc.t === "num" && significantDigits(doc.raw) > SET_VALUE_DIGITS) return;
  switch (doc.t) {
    case "obj": {
      const obj = actual as Record<string, unknown>;
      for (const [k, v] of doc.entries) {
        if (!(k in obj)) throw new Error(`${path}: documented member "${k}" is missing`);
        compareJson(v, obj[k], `${path}.${k}`, k);
      }
      if (!doc.open) {
        const documented = new Set(doc.entries.map(([k]) => k));
        const extra = Object.keys(obj).filter((k) => !documented.has(k));
        if (extra.length > 0) {
          throw new Error(`${path}: members not documented (and no …): ${extra.join(", ")}`);
        }
      }
      return;
    }
    case "arr": {
      const arr = actual as unknown[];
      if (!doc.open) {
        if (arr.length !== doc.items.length) {
          throw new Error(`${path}: documented ${doc.items.length} items, got ${arr.length}`);
        }
        doc.items.forEach((d, n) => compareJson(d, arr[n], `${path}[${n}]`, null));
        return;
      }
      let from = 0;
      doc.items.forEach((d, n) => {
        let last: unknown = null;
        for (; from < arr.length; from++) {
          try {
            compareJson(d, arr[from], `${path}[${from}]`, null);
            from++;
            return;
          } catch (e) {
            last = e;
          }
        }
        throw new Error(
          `${path}: documented item ${n} matches no item in order${
            last instanceof Error ? ` (last difference: ${last.message})` : ""
          }`,
        );
      });
      return;
    }
    case "str": {
      const s = actual as string;
      if (!doc.v.includes(ELLIPSIS)) {
        if (s !== doc.v) throw new Error(`${path}: documented ${short(doc.v)}, got ${short(s)}`);
        return;
      }
      const pieces = doc.v.split(ELLIPSIS);
      let at = 0;
      pieces.forEach((p, n) => {
        const found = n === 0 ? (s.startsWith(p) ? 0 : -1) : s.indexOf(p, at);
        if (found < 0 || (n === pieces.length - 1 && p !== "" && !s.endsWith(p))) {
          throw new Error(`${path}: documented text ${short(p)} not found in ${short(s)}`);
        }
        at = found + p.length;
      });
      return;
    }
    case "num":
    case "bool":
      if (actual !== doc.v) throw new Error(`${path}: documented ${doc.v}, got ${short(actual)}`);
      return;
    case "null":
      return;
  }
}

function short(v: unknown): string {
  const s = typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v) ?? String(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

// ---- outputs: -i heads, JSON bodies, event streams --------------------------------------------

interface SseEvent {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

/** The complete events of an event-stream body (comments and the unfinished tail skipped). */
function parseEvents(body: string): SseEvent[] {
  const out: SseEvent[] = [];
  const chunks = body.replaceAll("\r\n", "\n").split("\n\n");
  chunks.pop(); // not (yet) terminated by a blank line
  for (const chunk of chunks) {
    let event = "message";
    let id: string | null = null;
    const data: string[] = [];
    for (const l of chunk.split("\n")) {
      if (l.startsWith(":") || l === "") continue;
      const [field, ...rest] = l.split(":");
      const v = rest.join(":").replace(/^ /, "");
      if (field === "event") event = v;
      else if (field === "id") id = v;
      else if (field === "data") data.push(v);
    }
    if (data.length > 0 || event !== "message") out.push({ event, id, data: data.join("\n") });
  }
  return out;
}

/** Throws unless every documented event arrived, in order (others may come in between). */
function compareEvents(doc: SseEvent[], actual: SseEvent[]): void {
  let from = 0;
  doc.forEach((d, n) => {
    let last = "no event of that kind";
    for (; from < actual.length; from++) {
      const a = actual[from];
      if (a!.event !== d.event) continue;
      try {
        // Ids are `<boot>-<n>` (docs/http-api.md "Resuming a stream"), different on every run.
        const idShape = /^[0-9a-z]+-\d+$/;
        if ((d.id === null) !== (a!.id === null) || (a!.id !== null && !idShape.test(a!.id))) {
          throw new Error(`id: documented ${d.id}, got ${a!.id}`);
        }
        compareJson(parseDocJson(d.data), JSON.parse(a!.data), "data", null);
        from++;
        return;
      } catch (e) {
        last = e instanceof Error ? e.message : String(e);
      }
    }
    throw new Error(`documented event ${n} (${d.event}) did not arrive in order: ${last}`);
  });
}

/** Splits `-i` output into status code, headers and body. */
function splitHead(text: string): { code: number; headers: Map<string, string>; body: string } {
  const norm = text.replaceAll("\r\n", "\n");
  const end = norm.indexOf("\n\n");
  const head = (end < 0 ? norm : norm.slice(0, end)).split("\n");
  const headers = new Map<string, string>();
  for (const l of head.slice(1)) {
    const at = l.indexOf(":");
    if (at > 0) headers.set(l.slice(0, at).trim().toLowerCase(), l.slice(at + 1).trim());
  }
  const code = Number(/^HTTP\/\S+ (\d{3})/.exec(head[0]!)?.[1] ?? NaN);
  return { code, headers, body: end < 0 ? "" : norm.slice(end + 2) };
}

function compareHead(doc: string, actual: string): string {
  const d = splitHead(doc);
  const a = splitHead(actual);
  if (d.code !== a.code) throw new Error(`status: documented ${d.code}, got ${a.code}`);
  for (const [name, value] of d.headers) {
    const got = a.headers.get(name);
    if (got !== value) {
      throw new Error(`header ${name}: documented ${short(value)}, got ${short(got)}`);
    }
  }
  return a.body;
}

/** Compares a whole (non-stream) output with the documented one; throws on a difference. */
function compareOutput(doc: string, actual: string): void {
  let docBody = doc;
  let body = actual;
  if (doc.startsWith("HTTP/")) {
    body = compareHead(doc, actual);
    docBody = splitHead(doc).body;
  }
  docBody = docBody.trim();
  if (docBody === "") return;
  if (docBody.startsWith("{") || docBody.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new Error(`documented JSON, got ${short(body)}`);
    }
    compareJson(parseDocJson(docBody), parsed, "$", null);
    return;
  }
  if (docBody !== body.trim()) throw new Error(`documented ${short(docBody)}, got ${short(body)}`);
}

// ---- running the examples ----------------------------------------------------------------------

interface Target {
  readonly rt: RuntimeChild;
  readonly env: Record<string, string>;
  /** Documented values replaced by actual ones (a `RID=` line's run id) in later answers. */
  readonly substitutions: Map<string, string>;
}

/** What curl writes to stderr about each answer (its -w format; see runShell). */
const ANSWER_MARK = "@@answer";

/**
 * Runs a non-stream command with bash; resolves with its stdout. Every curl in it reports its
 * answer's method, status, URL and content type on stderr; when the command's output is one
 * curl's answer (curl last in its pipeline), that answer is checked against GET
 * /v0/openapi.json's document like every other answer the tests get (openapi_check.ts).
 */
async function runShell(command: string, env: Record<string, string>): Promise<string> {
  const wrap = `curl() { command curl -w '%{stderr}${ANSWER_MARK} %{method} %{http_code} ` +
    `%{url_effective} %{content_type}\\n' "$@"; }\n`;
  const out = await new Deno.Command("bash", {
    args: ["-c", wrap + command],
    env,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(EXAMPLE_TIMEOUT_MS),
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderrLines = new TextDecoder().decode(out.stderr).split("\n");
  const answers = stderrLines.filter((l) => l.startsWith(`${ANSWER_MARK} `));
  const stderr = stderrLines.filter((l) => !l.startsWith(`${ANSWER_MARK} `)).join("\n");
  if (!out.success && stdout === "") throw new Error(`exit ${out.code}: ${stderr}`);
  const lastSegment = command.split(/\||;|&&/).at(-1) ?? "";
  if (answers.length === 1 && /^\s*curl\b/.test(lastSegment)) {
    const [, method, status, url, ...type] = answers[0]!.split(" ") as [
      string,
      string,
      string,
      string,
      ...string[],
    ];
    const withHeaders = curlFlag(lastSegment, "i");
    const split = stdout.indexOf("\r\n\r\n");
    assertApiAnswer({
      method,
      path: new URL(url!).pathname,
      status: Number(status),
      contentType: type.join(" ") || null,
      body: withHeaders ? (split < 0 ? "" : stdout.slice(split + 4)) : stdout,
    });
  }
  return stdout;
}

/** Whether a curl command line has the one-letter flag, alone (`-N`) or grouped (`-sN`). */
function curlFlag(command: string, letter: string): boolean {
  return command.split(/\s+/).some((w) => /^-[a-zA-Z]+$/.test(w) && w.includes(letter));
}

async function post(base: string, path: string, body: unknown): Promise<void> {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, `${path}: ${await r.text()}`);
}

/**
 * What an event-stream example says happens while it streams, made by the test (keyed by the
 * stream's URL as the document writes it). A quiet stream sends nothing, not even its headers,
 * before its first event, so the test cannot see when it has subscribed: an action is repeated
 * every STREAM_ACTION_RETRY_MS (`attempt` > 0: undo the previous one first) until the documented
 * events have arrived.
 */
const STREAM_ACTIONS: Record<string, (base: string, attempt: number) => Promise<void>> = {
  // "while another terminal re-arms the machine and sets target_temp to 35" (after the e-stop,
  // target_temp 30): mode_change FAULT -> MANUAL, parameter_change 30 -> 35.
  '"$B/v0/events?provider_id=sim0&device_id=nothing"': async (base, attempt) => {
    if (attempt > 0) {
      await post(base, "/v0/mode", { mode: "FAULT" });
      await post(base, "/v0/parameters", { name: "target_temp", value: 30 });
    }
    await post(base, "/v0/mode", { mode: "MANUAL" });
    await post(base, "/v0/parameters", { name: "target_temp", value: 35 });
  },
};
const STREAM_ACTION_RETRY_MS = 1000;

/**
 * Runs a `curl -N` stream until every documented event arrived and resolves with what it
 * received; throws on a difference.
 */
async function runStream(ex: Example, target: Target): Promise<string> {
  const command = curlFlag(ex.command, "i") ? ex.command : ex.command.replace(/^curl /, "curl -i ");
  const child = new Deno.Command("bash", {
    args: ["-c", `exec ${command}`],
    env: target.env,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const docHasHead = ex.output.startsWith("HTTP/");
  const docEvents = parseEvents(`${docHasHead ? splitHead(ex.output).body : ex.output}\n\n`);
  assert.ok(docEvents.length > 0, `${ex.where}: a stream example documents no event`);
  const action = Object.entries(STREAM_ACTIONS).find(([url]) => ex.command.includes(url))?.[1];
  let matched = false;
  let wake: () => void = () => {};
  const acting = (async () => {
    for (let attempt = 0; action && !matched; attempt++) {
      await action(target.rt.base, attempt);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, STREAM_ACTION_RETRY_MS);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  })();
  let text = "";
  let lastProblem = "the stream did not start";
  const decoder = new TextDecoder();
  const reader = child.stdout.getReader();
  const timer = setTimeout(() => child.kill("SIGKILL"), STREAM_TIMEOUT_MS);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.replaceAll("\r\n", "\n").indexOf("\n\n") < 0) continue;
      try {
        if (docHasHead) compareHead(ex.output, text);
        compareEvents(docEvents, parseEvents(splitHead(text).body));
        return text;
      } catch (e) {
        lastProblem = e instanceof Error ? e.message : String(e);
      }
    }
    throw new Error(`stream ended or timed out after ${STREAM_TIMEOUT_MS} ms: ${lastProblem}`);
  } finally {
    matched = true;
    wake();
    clearTimeout(timer);
    try {
      child.kill("SIGTERM");
    } catch {
      // already ended
    }
    await reader.cancel().catch(() => {});
    await child.status;
    await acting;
  }
}

/** The value at `path` (a list of keys) in `value`, or undefined. */
function at(value: unknown, path: readonly (string | number)[]): unknown {
  let v = value;
  for (const k of path) v = (v as Record<string | number, unknown> | null)?.[k];
  return v;
}

/** The path of the first string equal to `s` in a documented value, or null. */
function pathOf(doc: DocValue, s: string): (string | number)[] | null {
  if (doc.t === "str") return doc.v === s ? [] : null;
  const children: [string | number, DocValue][] = doc.t === "obj"
    ? doc.entries
    : doc.t === "arr"
    ? doc.items.map((v, n) => [n, v])
    : [];
  for (const [k, v] of children) {
    const p = pathOf(v, s);
    if (p) return [k, ...p];
  }
  return null;
}

interface Previous {
  readonly doc: string;
  readonly actual: string;
}

/**
 * Runs one example; resolves with its actual output and the difference from the documented one
 * (null when it answers as documented). Throws when it cannot run at all.
 */
async function runExample(
  ex: Example,
  target: Target,
  prev: Previous | null,
): Promise<{ actual: string; problem: string | null }> {
  const problem = (e: unknown) => e instanceof Error ? e.message : String(e);
  const assignment = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(ex.command);
  if (assignment) {
    const name = assignment[1];
    let value = await runShell(`${ex.command}\nprintf %s "$${name}"`, target.env);
    // A value copied from the previous answer (a run id) is taken from the actual answer.
    if (prev && prev.doc.includes(value)) {
      const path = pathOf(parseDocJson(prev.doc.trim()), value);
      const actual = path ? at(JSON.parse(prev.actual), path) : undefined;
      if (typeof actual !== "string") {
        return { actual: value, problem: `${value} is not a string of the previous answer` };
      }
      target.substitutions.set(value, actual);
      value = actual;
    }
    target.env[name!] = value;
    return { actual: value, problem: null };
  }
  if (/^curl\b/.test(ex.command) && curlFlag(ex.command, "N")) {
    try {
      return { actual: await runStream(ex, target), problem: null };
    } catch (e) {
      return { actual: "", problem: problem(e) };
    }
  }
  const actual = await runShell(ex.command, target.env);
  if (ex.output.trim() === "") return { actual, problem: "documents no output" };
  let documented = ex.output;
  for (const [doc, real] of target.substitutions) documented = documented.replaceAll(doc, real);
  try {
    compareOutput(documented, actual);
    return { actual, problem: null };
  } catch (e) {
    return { actual, problem: problem(e) };
  }
}

/** The demo configuration for `<!-- doc-check: auth -->` blocks. */
function authDemo(demo: string): string {
  const http = "http:\n  enabled: true\n";
  assert.ok(demo.includes(http), "examples/demo.yaml: an http section starting with enabled");
  return demo.replace(
    http,
    `${http}  auth_enabled: true\n  auth_exempt_loopback: false\n`,
  );
}

/**
 * Waits until the demo has fetched its provider's own health report (GetHealth, in the poll
 * cycle after the first poll), which the documented providers/health answer shows: the document
 * was captured from a demo that had been up for a few seconds.
 */
async function untilProviderHealthReported(rt: RuntimeChild): Promise<void> {
  const deadline = Date.now() + EXAMPLE_TIMEOUT_MS;
  for (;;) {
    const health = await (await apiFetch(`${rt.base}/v0/providers/health`)).json();
    if (health.providers?.every((p: { reported: unknown }) => p.reported !== null)) return;
    assert.ok(Date.now() < deadline, "the provider's health report within the example timeout");
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startDemo(dir: string, env: Record<string, string> = {}): Promise<RuntimeChild> {
  return await startRuntimeChildOnFreePort((port) => ({
    ...mirrorOptions(dir, port),
    env,
    ...(env.RUNTIME_API_TOKEN ? { token: env.RUNTIME_API_TOKEN } : {}),
  }));
}

/** A block of nothing but `NAME=value` lines (what a reader pastes before the commands). */
function isDefinitions(b: Block): boolean {
  return b.setup.length > 0 && b.setup.every((l) => /^[A-Z_][A-Z0-9_]*=/.test(l.trim()));
}

/** What checkDocExamples ran. */
export interface DocCheckReport {
  /** `$` lines run and compared (assignments included). */
  readonly checked: number;
  /** `FILE:LINE` of every block left out by `doc-check: skip`. */
  readonly skipped: string[];
}

/**
 * Runs every `$` example of `file` (relative to the checkout) against a fresh demo and throws,
 * listing every example whose answer differs from the documented one. `commandBlocksOnly`: only
 * blocks with `$` lines and blocks of `NAME=value` definitions are read (a README whose other
 * blocks are plain commands).
 */
export async function checkDocExamples(
  file: string,
  o: { commandBlocksOnly?: boolean } = {},
): Promise<DocCheckReport> {
  const blocks = parseDoc(file, await Deno.readTextFile(`${REPO}${file}`))
    .filter((b) => !o.commandBlocksOnly || b.examples.length > 0 || isDefinitions(b));
  const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
  const failures: string[] = [];
  let checked = 0;
  const skipped: string[] = [];
  await withCheckoutMirror(demo, async (dir) => {
    await withCheckoutMirror(authDemo(demo), async (authDir) => {
      const rt = await startDemo(dir);
      let authRt: RuntimeChild | null = null;
      try {
        await untilProviderHealthReported(rt);
        const shellEnv = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", B: rt.base };
        const main: Target = { rt, env: { ...shellEnv }, substitutions: new Map() };
        let auth: Target | null = null;
        let prev: Previous | null = null;
        for (const block of blocks) {
          const at = `${file}:${block.line}`;
          for (const l of block.setup) {
            // The definitions a reader pastes first (B=..., J=...): B must be the demo's address.
            const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(l.trim());
            assert.ok(m, `${at}: lines before a block's first $ line are NAME=value only`);
            const value = await runShell(`${l}\nprintf %s "$${m[1]}"`, main.env);
            if (m[1] === "B") assert.equal(value, DOC_BASE, `${at}: B`);
            else main.env[m[1]!] = value;
          }
          if (block.directive?.startsWith("skip")) {
            assert.match(block.directive, /^skip \S/, `${at}: a skip says why`);
            skipped.push(at);
            continue;
          }
          let target = main;
          if (block.directive === "auth") {
            if (!auth) {
              authRt = await startDemo(authDir, { RUNTIME_API_TOKEN: TOKEN });
              auth = {
                rt: authRt,
                env: { ...main.env, B: authRt.base, RUNTIME_API_TOKEN: TOKEN },
                substitutions: new Map(),
              };
            }
            target = auth;
          } else {
            assert.equal(block.directive, null, `${at}: unknown doc-check`);
          }
          for (const ex of block.examples) {
            checked++;
            const { actual, problem } = await runExample(ex, target, prev);
            if (SHOW) console.log(`${ex.where}: $ ${ex.command}\n${actual}`);
            if (problem) failures.push(`${ex.where}: $ ${ex.command}\n    ${problem}`);
            prev = { doc: ex.output, actual };
          }
        }
      } finally {
        const codes = [await rt.stop(), await authRt?.stop()];
        assert.deepEqual(codes.filter((c) => c !== undefined && c !== 0), [], "clean stops");
      }
    });
  });
  assert.deepEqual(failures, [], `${failures.length} example(s) differ:\n${failures.join("\n")}`);
  return { checked, skipped };
}
