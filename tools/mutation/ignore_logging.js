// StrykerJS ignorer "logging" (deno task mutate): mutants inside a log call are not mutated.
// A log line is for people, not behaviour the machine depends on; its text is not asserted by
// tests (style.md: assert on codes, states and values, not on log text). Matches calls of
// debug/info/warn/error on anything named like a logger (`log`, `this.#log`, `o.log`, `logger`).
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

export const strykerPlugins = [{
  kind: "Ignore",
  name: "logging",
  value: {
    shouldIgnore(path) {
      const node = path.node;
      if (node.type !== "CallExpression" && node.type !== "OptionalCallExpression") return undefined;
      const callee = node.callee;
      if (callee.type !== "MemberExpression" && callee.type !== "OptionalMemberExpression") {
        return undefined;
      }
      const prop = callee.property;
      if (prop.type !== "Identifier" || !LEVELS.has(prop.name)) return undefined;
      // `x.log.warn(...)`, `log.warn(...)`, `this.#log.warn(...)`; also `log?.warn(...)`.
      return isLoggerObject(callee.object) ? "log message" : undefined;
    },
  },
}];
