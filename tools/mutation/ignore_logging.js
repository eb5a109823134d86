// StrykerJS ignorer "logging" (deno task mutate): mutants inside a log call are not mutated.
// A log line is for people, not behaviour the machine depends on; its text is not asserted by
// tests (style.md: assert on codes, states and values, not on log text). Matches calls of
// debug/info/warn/error on anything named like a logger (`log`, `this.#log`, `o.log`, `logger`),
// the statement that is only such a call (Stryker's "remove the call" mutant sits on the
// statement), a block made only of such statements (a catch that just logs), and the name a
// child logger is given (`log.child("parameters")`), which only prefixes log lines.
const LEVELS = new Set(["debug", "info", "warn", "error"]);

function isLoggerObject(node) {
  if (node.type === "Identifier") return /^(log|logger)$/i.test(node.name);
  if (node.type === "MemberExpression" || node.type === "OptionalMemberExpression") {
    const p = node.property;
    const name = p.type === "PrivateName" ? p.id.name : p.type === "Identifier" ? p.name : "";
    return /^(log|logger)$/i.test(name);
  }
  if (node.type === "ThisExpression") return false;
  return false;
}

/** `<logger>.<method>(...)` with a method in `methods`. */
function isLoggerCall(node, methods) {
  if (node.type !== "CallExpression" && node.type !== "OptionalCallExpression") return false;
  const callee = node.callee;
  if (callee.type !== "MemberExpression" && callee.type !== "OptionalMemberExpression") {
    return false;
  }
  const prop = callee.property;
  if (prop.type !== "Identifier" || !methods.has(prop.name)) return false;
  // `x.log.warn(...)`, `log.warn(...)`, `this.#log.warn(...)`; also `log?.warn(...)`.
  return isLoggerObject(callee.object);
}

function isLogStatement(node) {
  return node.type === "ExpressionStatement" && isLoggerCall(node.expression, LEVELS);
}

const CHILD = new Set(["child"]);

export const strykerPlugins = [{
  kind: "Ignore",
  name: "logging",
  value: {
    shouldIgnore(path) {
      const node = path.node;
      if (isLoggerCall(node, LEVELS) || isLogStatement(node)) return "log message";
      if (
        node.type === "BlockStatement" && node.body.length > 0 && node.body.every(isLogStatement)
      ) {
        return "block that only logs";
      }
      if (isLoggerCall(node, CHILD)) return "logger name";
      return undefined;
    },
  },
}];
