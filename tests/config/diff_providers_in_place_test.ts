/**
 * diffProviders: an entry that differs only in IN_PLACE_PROVIDER_FIELDS (restart_policy,
 * hello_timeout_ms, ready_timeout_ms) is "updated", naming those fields; any other difference
 * (with them or alone) makes it "changed".
 */
import assert from "node:assert/strict";
import { diffProviders, type ProviderConfig } from "../../src/config/mod.ts";
import { simProvider } from "../helpers/sim_config.ts";

const P = simProvider("p");

function diffOf(next: ProviderConfig) {
  const d = diffProviders([P], [next]);
  return {
    changed: d.changed.map((p) => p.id),
    updated: d.updated.map((u) => ({ id: u.entry.id, fields: u.fields })),
    unchanged: d.unchanged,
  };
}

Deno.test("diffProviders: only restart_policy differs -> updated (restart_policy)", () => {
  assert.deepEqual(diffOf({ ...P, restartPolicy: { ...P.restartPolicy, maxAttempts: 1 } }), {
    changed: [],
    updated: [{ id: "p", fields: ["restart_policy"] }],
    unchanged: [],
  });
});

Deno.test("diffProviders: hello and ready timeouts differ -> updated, fields in table order", () => {
  const d = diffOf({ ...P, readyTimeoutMs: 1, helloTimeoutMs: 2 });
  assert.deepEqual(d.updated, [{ id: "p", fields: ["hello_timeout_ms", "ready_timeout_ms"] }]);
  assert.deepEqual(d.changed, []);
});

Deno.test("diffProviders: restart_policy with timeout_ms, args or command -> changed", () => {
  const policy = { ...P.restartPolicy, enabled: false };
  for (
    const next of [
      { ...P, restartPolicy: policy, timeoutMs: P.timeoutMs + 1 },
      { ...P, restartPolicy: policy, args: [...P.args, "x"] },
      { ...P, command: "/bin/true" },
    ]
  ) {
    assert.deepEqual(diffOf(next), { changed: ["p"], updated: [], unchanged: [] });
  }
});

Deno.test("diffProviders: the same entry -> unchanged", () => {
  assert.deepEqual(diffOf({ ...P }), { changed: [], updated: [], unchanged: ["p"] });
});
