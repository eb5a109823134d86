/**
 * A parameter's name in the texts about a change of the recipe (the AUTO entry a set refuses,
 * a reload's value changes) is JSON-quoted and cut to MAX_PARAMETER_NAME_CHARS (the loader's
 * bound), and a name a client sends that names no parameter is cut in the NOT_FOUND: 10 kB of it,
 * with a quote and a line break, can neither flood nor forge the text. The store makes its
 * `parameters` logger once, however many reloads redeclare it.
 */
import assert from "node:assert/strict";
import type { Logger, RuntimeError } from "../../src/common/mod.ts";
import { MAX_PARAMETER_NAME_CHARS, type ParameterConfig } from "../../src/config/mod.ts";
import { ParameterStore } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

/** 10 kB of a name, a quote and a line break in it (a declaration the loader did not judge). */
const NAME = `n"\n${"x".repeat(10_000)}`;
/** NAME as a message names it: cut to MAX_PARAMETER_NAME_CHARS, marked, JSON-quoted. */
const QUOTED = JSON.stringify(`${NAME.slice(0, MAX_PARAMETER_NAME_CHARS)}\u2026`);

function param(name: string, o: Partial<ParameterConfig> = {}): ParameterConfig {
  return { name, type: "double", default: 1, allowedValues: [], ...o };
}

Deno.test("ParameterStore.set names a parameter of 10 kB cut and quoted in the AUTO entry it refuses", () => {
  const whys: string[] = [];
  const s = new ParameterStore({
    parameters: [param(NAME), param("temp")],
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
    modes: { invalidateAutoEntry: (why) => void whys.push(why) },
  });
  s.set(NAME, 2);
  s.set("temp", 3);
  assert.deepEqual(whys, [
    `a parameter set changed the recipe (${QUOTED} 1 -> 2)`,
    `a parameter set changed the recipe ("temp" 1 -> 3)`,
  ]);
});

Deno.test("ParameterStore.valueChanges names a parameter of 10 kB cut and quoted, removed or reset", () => {
  const s = new ParameterStore({
    parameters: [param(NAME), param(`r${NAME}`)],
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
  });
  s.set(NAME, 5);
  const removed = JSON.stringify(`r${NAME.slice(0, MAX_PARAMETER_NAME_CHARS - 1)}\u2026`);
  assert.deepEqual(s.valueChanges([param(NAME, { max: 2 })]), [
    `${QUOTED} (its value 5 would go to the default 1)`,
    `${removed} (removed)`,
  ]);
});

Deno.test("ParameterStore.set of an unknown name of 10 kB names it cut", () => {
  const s = new ParameterStore({
    parameters: [param("temp")],
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
  });
  assert.throws(() => s.set(NAME, 1), (e: RuntimeError) => {
    assert.equal(e.code, "NOT_FOUND");
    assert.equal(
      e.message,
      `Parameter not found: ${NAME.slice(0, MAX_PARAMETER_NAME_CHARS)}\u2026`,
    );
    return true;
  });
});

Deno.test("ParameterStore makes its parameters logger once, at construction, not again at a redeclare", () => {
  const scopes: string[] = [];
  const base = testLogger();
  const log: Logger = {
    debug: (m) => base.debug(m),
    info: (m) => base.info(m),
    warn: (m) => base.warn(m),
    error: (m) => base.error(m),
    child: (scope) => {
      scopes.push(scope);
      return base.child(scope);
    },
  };
  const s = new ParameterStore({
    parameters: [param("temp")],
    bus: new EventBus(),
    clock: systemClock,
    log,
  });
  s.redeclare([param("temp", { default: 2 })]);
  s.redeclare([param("temp"), param("temp")]);
  assert.deepEqual(scopes, ["parameters"]);
});
