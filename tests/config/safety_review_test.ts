/**
 * `--check-config`'s review of the e-stop from the configuration alone: warn when an e-stop would
 * command nothing, verify nothing, or command a device no expectation reads.
 */
import assert from "node:assert/strict";
import {
  ESTOP_COMMANDS_NOTHING,
  ESTOP_DEVICE_UNVERIFIED,
  ESTOP_VERIFIES_NOTHING,
} from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

const NOTHING = ESTOP_COMMANDS_NOTHING;
const UNVERIFIABLE = ESTOP_VERIFIES_NOTHING;
const UNREAD = ESTOP_DEVICE_UNVERIFIED;

/** The review's warnings as `start-of-message path @line:column`. */
function review(yaml: string, safetyReview = true): string[] {
  const r = load(yaml, { safetyReview });
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.diagnostics
    .filter((d) => [NOTHING, UNVERIFIABLE, UNREAD].some((w) => d.message.startsWith(w)))
    .map((d) => {
      const kind = [NOTHING, UNVERIFIABLE, UNREAD].find((w) => d.message.startsWith(w));
      return `${kind} ${d.path} @${d.line}:${d.column}`;
    });
}

const HOOK = "{device_handle: p0/d0, function_name: stop}";
const EXPECT_D0 = "{signal: p0/d0/speed, equals: 0}";

const CASES: ReadonlyArray<{ name: string; yaml: string; warnings: string[] }> = [
  {
    name: "no safety section, no automation: nothing commanded, nothing verified (at the root)",
    yaml: `
${PROV}
`,
    warnings: [`${NOTHING}  @1:1`, `${UNVERIFIABLE}  @1:1`],
  },
  {
    name: "an empty safety section: at safety",
    yaml: `
${PROV}
safety: {}
`,
    warnings: [`${NOTHING} safety @2:1`, `${UNVERIFIABLE} safety @2:1`],
  },
  {
    name: "zero_is_safe alone commands (what it zeroes needs the inventory); nothing verified",
    yaml: `
${PROV}
safety:
  safe_state: {zero_is_safe: true}
`,
    warnings: [`${UNVERIFIABLE} safety.safe_state @3:3`],
  },
  {
    name: "setpoints alone command (whether they cover every function needs the inventory)",
    yaml: `
${PROV}
safety:
  safe_state:
    setpoints: [${HOOK}]
    expect: [${EXPECT_D0}]
`,
    warnings: [],
  },
  {
    name: "a hook from * into FAULT runs on every e-stop (adopted without a safety section)",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    after_transition:
      - {from: "*", to: FAULT, calls: [${HOOK}]}
`,
    warnings: [`${UNVERIFIABLE}  @1:1`],
  },
  {
    name: "a hook from * to * runs on every e-stop too, also beside a safety section",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - {calls: [${HOOK}]}
safety:
  safe_state:
    expect: [${EXPECT_D0}]
`,
    warnings: [],
  },
  {
    name:
      "a hook from AUTO into FAULT does not run on an e-stop in MANUAL: nothing on every e-stop",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - {from: AUTO, to: FAULT, calls: [${HOOK}]}
safety:
  safe_state:
    expect: [${EXPECT_D0}]
`,
    warnings: [`${NOTHING} safety.safe_state @7:3`],
  },
  {
    name: "a device the hooks command without an expectation on it: at its first call, once",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks:
      - ${HOOK}
      - {device_handle: p0/d1, function_name: stop}
      - {device_handle: p0/d1, function_name: brake}
    expect: [${EXPECT_D0}]
`,
    warnings: [`${UNREAD} safety.safe_state.hooks[1] @6:9`],
  },
  {
    name: "a device commanded by a hook from * into FAULT without an expectation",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    after_transition:
      - {from: "*", to: FAULT, calls: [${HOOK}, {device_handle: p0/d2, function_name: off}]}
safety:
  safe_state:
    hooks: [${HOOK}]
    expect: [${EXPECT_D0}]
`,
    warnings: [`${UNREAD} automation.mode_transition_hooks.after_transition[0].calls[1] @5:85`],
  },
  {
    name: "hooks and expectations for every device they command: clean",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks: [${HOOK}]
    expect: [${EXPECT_D0}]
`,
    warnings: [],
  },
];

for (const c of CASES) {
  Deno.test(`loadConfig safetyReview: ${c.name}`, () => {
    assert.deepEqual(review(c.yaml), c.warnings);
  });
}

Deno.test("loadConfig reviews the e-stop only when asked (--check-config), and only a valid file", () => {
  assert.deepEqual(review(`${PROV}\n`, false), []);
  const invalid = load(`${PROV}\npolling: {interval_ms: 5}\n`, { safetyReview: true });
  assert.equal(invalid.config, null);
  assert.deepEqual(
    invalid.diagnostics.filter((d) => d.severity === "warning").map((d) => d.path),
    [],
  );
});
