/**
 * A parameter set's refusal (POST /v0/parameters' 400, the audit's reason) names what the client
 * sent -- a string value, a number as written, up to a 64 KiB body -- cut to
 * QUOTED_PARAMETER_VALUE_CHARS and a string JSON-quoted, and lists at most MAX_NAMED_IN_WARNING
 * allowed values, each cut: 10 kB of it, with a quote and a line break, neither floods nor forges
 * the answer.
 */
import assert from "node:assert/strict";
import { MAX_NAMED_IN_WARNING, RuntimeError } from "../../src/common/mod.ts";
import type { ParameterConfig } from "../../src/config/mod.ts";
import { ParameterStore, QUOTED_PARAMETER_VALUE_CHARS } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const TEN_KB = 10_000;

/** 10 kB of a client's string, a quote and a line break in it. */
const VALUE = `it's' "x"\n${"v".repeat(TEN_KB)}`;
/** VALUE as a refusal names it: cut to QUOTED_PARAMETER_VALUE_CHARS, marked, JSON-quoted. */
const QUOTED = JSON.stringify(`${VALUE.slice(0, QUOTED_PARAMETER_VALUE_CHARS)}\u2026`);

const ALLOWED = Array.from({ length: 300 }, (_, i) => `${i}${"a".repeat(TEN_KB)}`);

function store(): ParameterStore {
  const params: ParameterConfig[] = [
    { name: "temp", type: "double", default: 1, allowedValues: [] },
    { name: "count", type: "int64", default: 1, allowedValues: [] },
    { name: "recipe", type: "string", default: ALLOWED[0]!, allowedValues: ALLOWED },
  ];
  return new ParameterStore({
    parameters: params,
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
  });
}

/** The message `set` refuses with (INVALID_ARGUMENT). */
function refusal(s: ParameterStore, name: string, value: unknown, written?: string): string {
  try {
    s.set(name, value, undefined, written);
  } catch (e) {
    assert.ok(e instanceof RuntimeError, String(e));
    assert.equal(e.code, "INVALID_ARGUMENT");
    return e.message;
  }
  assert.fail("the set was accepted");
}

Deno.test("ParameterStore.set names a client's 10 kB string of the wrong type cut and quoted", () => {
  assert.equal(
    refusal(store(), "temp", VALUE),
    `Invalid value for parameter 'temp': expected a number (double), got string ${QUOTED} ` +
      "(rule: type)",
  );
});

Deno.test("ParameterStore.set names a client's 10 kB string outside allowed_values cut and lists at most MAX_NAMED_IN_WARNING", () => {
  const cut = (v: string) => JSON.stringify(`${v.slice(0, QUOTED_PARAMETER_VALUE_CHARS)}\u2026`);
  const message = refusal(store(), "recipe", VALUE);
  assert.equal(
    message,
    `Invalid value for parameter 'recipe': ${QUOTED} is not one of ${
      ALLOWED.slice(0, MAX_NAMED_IN_WARNING).map(cut).join(", ")
    } and ${ALLOWED.length - MAX_NAMED_IN_WARNING} more (rule: allowed_values)`,
  );
  assert.ok(message.length < 2000, `${message.length} characters`);
});

Deno.test("ParameterStore.set names a number written with 10 kB of digits cut", () => {
  const written = `1${"0".repeat(TEN_KB)}`;
  assert.equal(
    refusal(store(), "count", Infinity, written),
    `Invalid value for parameter 'count': expected an integer (int64) within \u00b1(2^53-1), got ${
      written.slice(0, QUOTED_PARAMETER_VALUE_CHARS)
    }\u2026 (beyond any double: JSON reads it as number Infinity) (rule: type)`,
  );
});
