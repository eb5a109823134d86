/**
 * scripts/mutation_extra.ts: the operators Stryker lacks produce exactly the expected mutants on
 * small fixtures, the report follows Stryker's schema, and coverage is read from LCOV.
 */
import assert from "node:assert/strict";
import {
  applyMutant,
  type ExtraMutant,
  extraReport,
  generateMutants,
  parseLcov,
} from "../../scripts/mutation_extra.ts";
import { originalText, parseScopeFile } from "../../scripts/mutation_report.ts";

/** Each mutant as [operator, line, original text, replacement]. */
function described(source: string, operator?: string): Array<[string, number, string, string]> {
  return generateMutants(source)
    .filter((m) => operator === undefined || m.operator === operator)
    .map((m) => [m.operator, m.line, source.slice(m.start, m.end), m.replacement]);
}

Deno.test("CompoundAssignment turns every compound operator plain, keeping both sides", () => {
  const src = [
    "let a = 0, b = 1, c: number | null = null, d = false;",
    "a += b; a -= b; a *= b; a **= b; a /= b; a %= b;",
    "a <<= b; a >>= b; a >>>= b; a &= b; a |= b; a ^= b;",
    "c ??= 2; d ||= true; d &&= false;",
    "a = b; a == b;",
  ].join("\n");
  const ops = ["+=", "-=", "*=", "**=", "/=", "%=", "<<=", ">>=", ">>>=", "&=", "|=", "^="];
  assert.deepEqual(described(src, "CompoundAssignment"), [
    ...ops.slice(0, 6).map((op) => ["CompoundAssignment", 2, `a ${op} b`, "a = b"]),
    ...ops.slice(6).map((op) => ["CompoundAssignment", 3, `a ${op} b`, "a = b"]),
    ["CompoundAssignment", 4, "c ??= 2", "c = 2"],
    ["CompoundAssignment", 4, "d ||= true", "d = true"],
    ["CompoundAssignment", 4, "d &&= false", "d = false"],
  ]);
  // In an expression too: the value of the mutated assignment is the plain one.
  const [m] = generateMutants("const x = (y |= 4);");
  assert.equal(applyMutant("const x = (y |= 4);", m!), "const x = (y = 4);");
});

Deno.test("SwitchCase removes one case clause with its body per mutant, never the default", () => {
  const src = `function f(k: string): number {
  switch (k) {
    case "a":
      return 1;
    case "b":
    case "c": {
      return 2;
    }
    default:
      return 0;
  }
}`;
  const mutants = generateMutants(src).filter((m) => m.operator === "SwitchCase");
  assert.deepEqual(mutants.map((m) => [m.line, src.slice(m.start, m.end)]), [
    [3, 'case "a":\n      return 1;'],
    [5, 'case "b":'],
    [6, 'case "c": {\n      return 2;\n    }'],
  ]);
  assert.ok(mutants.every((m) => m.replacement === ""));
  const mutated = applyMutant(src, mutants[0]!);
  const f = new Function("k", mutated.replace(/^function f\(k: string\): number \{|\}$/g, ""));
  assert.equal(f("a"), 0); // falls to default now
  assert.equal(f("b"), 2);
});

Deno.test("CatchFailOpen opens a catch that refuses: return null in a gate whose null allows, else an empty block", () => {
  const src = `class G {
  gate(x: number): string | null {
    if (x > 1) return null;
    try {
      check(x);
    } catch (err) {
      return "refused: " + String(err);
    }
    return null;
  }
  async stop(): Promise<void> {
    try {
      await halt();
    } catch {
      throw new Error("halt failed");
    }
  }
  onlyNullInCatch(): string | null {
    try {
      return read();
    } catch {
      return null;
    }
  }
  logs(): void {
    try {
      check(1);
    } catch (err) {
      log.warn(err);
    }
  }
  nested(): string {
    try {
      check(1);
    } catch {
      [1].forEach(() => {
        return;
      });
    }
    return "ok";
  }
}`;
  assert.deepEqual(described(src, "CatchFailOpen"), [
    ["CatchFailOpen", 6, '{\n      return "refused: " + String(err);\n    }', "{ return null; }"],
    ["CatchFailOpen", 14, '{\n      throw new Error("halt failed");\n    }', "{}"],
    ["CatchFailOpen", 21, "{\n      return null;\n    }", "{}"],
  ]);
});

Deno.test("AwaitDropped drops each await, in statements and in expressions, not a plain return await", () => {
  const src = `async function f(p: Promise<number>) {
  await stop();
  const v = (await p) + 1;
  try {
    return await g(await p);
  } finally {
    done();
  }
  const h = async () => await p;
  return await g(await p);
}`;
  assert.deepEqual(described(src, "AwaitDropped"), [
    ["AwaitDropped", 2, "await stop()", "stop()"],
    ["AwaitDropped", 3, "await p", "p"],
    // Inside try, returning the promise lets its rejection escape the try: a real change.
    ["AwaitDropped", 5, "await g(await p)", "g(await p)"],
    ["AwaitDropped", 5, "await p", "p"],
    ["AwaitDropped", 10, "await p", "p"],
  ]);
});

Deno.test("ConcurrentCall runs a method call on this or a local twice at once, not a free function, a logger, a collection or a synchronous call", () => {
  const src = `import { registry } from "./r.ts";
class C {
  #estop = { trigger: async (_r: string) => {} };
  async run(session: { stop(): Promise<void>; values: number[] }) {
    await this.#estop.trigger("x");
    this.#o.bus.publish(1);
    session.stop();
    await session.stop();
    await free();
    registry.reset();
    this.#log.warn("x");
    log.info("y");
    await this.#privateMethod();
    const n = this.#estop.count();
    {
      const local = this.#estop;
      await local.trigger("y");
    }
    this.#pending.set("k", 1);
    this.#queue.push(2);
    session.values.forEach((v) => this.#pending.set(v, 1));
  }
  onEvent(session: { stop(): Promise<void> }) {
    void session.stop();
    session.stop();
    this.#o.bus.publish(2);
  }
}`;
  assert.deepEqual(described(src, "ConcurrentCall"), [
    [
      "ConcurrentCall",
      5,
      'await this.#estop.trigger("x");',
      'void this.#estop.trigger("x"); await this.#estop.trigger("x");',
    ],
    [
      "ConcurrentCall",
      6,
      "this.#o.bus.publish(1);",
      "void this.#o.bus.publish(1); this.#o.bus.publish(1);",
    ],
    ["ConcurrentCall", 7, "session.stop();", "void session.stop(); session.stop();"],
    ["ConcurrentCall", 8, "await session.stop();", "void session.stop(); await session.stop();"],
    [
      "ConcurrentCall",
      17,
      'await local.trigger("y");',
      'void local.trigger("y"); await local.trigger("y");',
    ],
    // In a synchronous function only a voided call (fire and forget) may run concurrently.
    ["ConcurrentCall", 24, "void session.stop();", "void session.stop(); void session.stop();"],
  ]);
});

Deno.test("generateMutants lists mutants in source order, and every one changes the text", () => {
  const src = `async function f(o: { n: number; go(): Promise<void> }, k: number) {
  switch (k) {
    case 1:
      o.n += 1;
      await o.go();
      break;
  }
}`;
  const ms = generateMutants(src);
  assert.deepEqual(ms.map((m) => m.operator), [
    "SwitchCase",
    "CompoundAssignment",
    "AwaitDropped",
    "ConcurrentCall",
  ]);
  for (const m of ms) assert.notEqual(applyMutant(src, m), src);
});

Deno.test("extraReport writes Stryker's schema: 1-based positions that read back as the original", () => {
  const source = "let a = 0;\nfunction f() {\n  a |= 2;\n}\n";
  const mutants = generateMutants(source).map((mutant: ExtraMutant) => ({
    mutant,
    status: "Survived" as const,
  }));
  const report = extraReport([{ path: "src/x.ts", source, mutants }]);
  const [m] = (report.files["src/x.ts"])!.mutants;
  assert.equal(m!.mutatorName, "CompoundAssignment");
  assert.deepEqual(m!.location, { start: { line: 3, column: 3 }, end: { line: 3, column: 9 } });
  assert.equal(originalText(source, m!), "a |= 2");
  assert.equal(m!.replacement, "a = 2");
  assert.equal(report.schemaVersion, "2");
});

Deno.test("parseLcov keeps the lines each file hit", () => {
  const lcov = [
    "SF:/r/src/a.ts",
    "DA:1,3",
    "DA:2,0",
    "DA:5,1",
    "end_of_record",
    "SF:/r/src/b.ts",
    "DA:1,0",
    "end_of_record",
  ].join("\n");
  const hits = parseLcov(lcov);
  assert.deepEqual([...hits.get("/r/src/a.ts")!], [1, 5]);
  assert.deepEqual([...hits.get("/r/src/b.ts")!], []);
});

Deno.test("parseScopeFile reads Stryker's line-range suffix", () => {
  assert.deepEqual(parseScopeFile("src/host/serve.ts:176-183"), {
    path: "src/host/serve.ts",
    from: 176,
    to: 183,
  });
  assert.deepEqual(parseScopeFile("src/http/auth.ts"), {
    path: "src/http/auth.ts",
    from: 1,
    to: Number.POSITIVE_INFINITY,
  });
});
