/**
 * loadConfigFileAsking: the load a reload makes, whose file-system questions (what is at each path
 * the file names, whether each bare command is on PATH) are asked asynchronously -- off the event
 * loop's thread, each bounded (src/main.ts configReload) -- then answered from memory. Its
 * diagnostics and configuration are those of the synchronous load over the same answers; a
 * question that got no answer in time is an error at the key naming the path, and once one did
 * not answer, no more are asked (PATH_QUESTIONS_IN_FLIGHT at most in flight).
 */
import assert from "node:assert/strict";
import {
  type CommandAnswer,
  loadConfigFile,
  loadConfigFileAsking,
  PATH_QUESTIONS_IN_FLIGHT,
  type PathAnswer,
} from "../../src/config/mod.ts";

const PATH = "/etc/rig/runtime.yaml";

/** A file system of answers: the paths named here, nothing elsewhere. */
const FILES: ReadonlyMap<string, PathAnswer> = new Map([
  ["/etc/rig/bin/prov", { kind: "file", mode: 0o755 }],
  ["/etc/rig/bin/copied", { kind: "file", mode: 0o644 }],
  ["/etc/rig/bin", { kind: "other", what: "a directory" }],
  ["/etc/rig/tls/cert.pem", { kind: "file", mode: 0o644 }],
  ["/etc/rig/bt.xml", { kind: "file", mode: 0o644 }],
  ["/etc/rig/mqtt/ca.pem", { kind: "file", mode: 0o644 }],
]);
const ON_PATH: ReadonlySet<string> = new Set(["deno"]);

const YAML = `runtime:
  name: rig
http:
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
providers:
  - {id: a, command: bin/prov}
  - {id: b, command: bin/copied}
  - {id: c, command: ./bin}
  - {id: d, command: bin/gone}
  - {id: e, command: deno}
  - {id: f, command: nowhere}
automation:
  enabled: true
  behavior_tree: bt.xml
sparkplug:
  enabled: true
  broker_url: mqtts://broker:8883
  group_id: lab
  tls:
    ca_file: mqtt/ca.pem
`;

const base = (mode: "check" | "start") => ({
  path: PATH,
  mode,
  env: {},
  cwd: "/var/lib/rig",
  readFile: () => Promise.resolve({ ok: true as const, bytes: new TextEncoder().encode(YAML) }),
});

function statOf(p: string): PathAnswer {
  return FILES.get(p) ?? { kind: "none" };
}

/** Questions answered asynchronously from FILES and ON_PATH, but for `hung` (never answered). */
function asking(hung: (name: string) => boolean = () => false) {
  const asked: string[] = [];
  const later = <T>(name: string, answer: T): Promise<T> => {
    asked.push(name);
    if (hung(name)) return new Promise(() => {});
    return new Promise((r) => setTimeout(() => r(answer), 0));
  };
  return {
    asked,
    ask: {
      stat: (p: string) => later(p, statOf(p)),
      commandExists: (c: string) =>
        later<CommandAnswer>(c, { kind: ON_PATH.has(c) ? "found" : "none" }),
    },
  };
}

for (const mode of ["check", "start"] as const) {
  Deno.test(`the asking load (${mode}) says what the synchronous load says over the same answers`, async () => {
    const sync = await loadConfigFile({
      ...base(mode),
      fileExists: (p) => statOf(p).kind === "file",
      pathKind: (p) => {
        const s = statOf(p);
        return s.kind === "other" ? s.what : null;
      },
      fileMode: (p) => {
        const s = statOf(p);
        return s.kind === "file" ? s.mode : null;
      },
      commandExists: (c) => ON_PATH.has(c),
    });
    const { ask, asked } = asking();
    const async = await loadConfigFileAsking({ ...base(mode), ask });
    assert.ok(sync.readable && async.readable);
    // Every kind of answer is in there: missing, not executable, a folder, not on PATH.
    const messages = sync.diagnostics.map((d) => `${d.path}: ${d.message}`);
    for (
      const part of [
        "http.tls_key_path: file not found: /etc/rig/tls/key.pem",
        "providers[1].command: is not executable: /etc/rig/bin/copied (mode 0644)",
        "providers[2].command: is not a regular file: /etc/rig/bin is a directory",
        "providers[3].command: file not found: /etc/rig/bin/gone",
        'providers[5].command: "nowhere" not found on PATH',
      ]
    ) assert.ok(messages.includes(part), `${part} in ${JSON.stringify(messages)}`);
    assert.deepEqual(async.diagnostics, sync.diagnostics);
    assert.deepEqual(async.config, sync.config);
    assert.equal(async.skipped, undefined);
    // Each asked once.
    assert.deepEqual([...asked].sort(), [...new Set(asked)].sort());
  });
}

Deno.test("a path the asking load gets no answer about is an error at its key, line and column, naming the path", async () => {
  const { ask } = asking();
  const loaded = await loadConfigFileAsking({
    ...base("start"),
    ask: {
      ...ask,
      // As the reload's bound says it (src/app/kernel.ts reloadPathAnswers).
      stat: (p) =>
        p === "/etc/rig/bin/prov"
          ? Promise.resolve({ kind: "unanswered", why: "no answer within 2000 ms" })
          : ask.stat(p),
    },
  });
  assert.ok(loaded.readable);
  assert.equal(loaded.config, null);
  const hung = loaded.diagnostics.filter((d) => d.message.includes("no answer"));
  assert.deepEqual(hung.map((d) => [d.severity, d.path, d.line, d.column, d.message]), [
    [
      "error",
      "providers[0].command",
      7,
      13,
      `cannot check "/etc/rig/bin/prov": no answer within 2000 ms`,
    ],
  ]);
});

Deno.test("a bare command whose PATH lookup gets no answer is an error naming the command and what the lookup waited for", async () => {
  const { ask } = asking();
  const loaded = await loadConfigFileAsking({
    ...base("start"),
    ask: {
      ...ask,
      commandExists: (c) =>
        c === "deno"
          ? Promise.resolve({ kind: "unanswered", why: "/mnt/nfs/bin/deno: no answer" })
          : ask.commandExists(c),
    },
  });
  assert.ok(loaded.readable);
  assert.equal(loaded.config, null);
  assert.deepEqual(
    loaded.diagnostics.filter((d) => d.message.includes("no answer")).map((d) =>
      `${d.severity} ${d.path}: ${d.message}`
    ),
    ['error providers[4].command: cannot look "deno" up on PATH: /mnt/nfs/bin/deno: no answer'],
  );
});

Deno.test("once a question goes unanswered no more are asked: PATH_QUESTIONS_IN_FLIGHT at most wait on a hung mount", async () => {
  const n = PATH_QUESTIONS_IN_FLIGHT * 3;
  const providers = Array.from(
    { length: n },
    (_, i) => `  - {id: p${i}, command: /mnt/hung/p${i}}`,
  );
  const yaml = `providers:\n${providers.join("\n")}\n`;
  let asked = 0;
  const resolvers: Array<() => void> = [];
  const loading = loadConfigFileAsking({
    ...base("start"),
    readFile: () => Promise.resolve({ ok: true as const, bytes: new TextEncoder().encode(yaml) }),
    ask: {
      stat: () => {
        asked++;
        // Each answers "unanswered" once the test says so (the reload's 2 s bound).
        return new Promise((r) => resolvers.push(() => r({ kind: "unanswered", why: "hung" })));
      },
      commandExists: () => Promise.resolve({ kind: "found" }),
    },
  });
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
  assert.equal(asked, PATH_QUESTIONS_IN_FLIGHT, "asked at once");
  for (const r of resolvers) r();
  const loaded = await loading;
  assert.equal(asked, PATH_QUESTIONS_IN_FLIGHT, "none asked after the first unanswered");
  assert.ok(loaded.readable);
  assert.equal(loaded.config, null);
  assert.equal(
    loaded.diagnostics.filter((d) => d.severity === "error" && d.message.endsWith(": hung")).length,
    PATH_QUESTIONS_IN_FLIGHT,
  );
  assert.equal(loaded.skipped, n - PATH_QUESTIONS_IN_FLIGHT);
});
