/**
 * The shared rig of the token-reload scenarios (call_token_reload_at_turn_test.ts,
 * mode_token_reload_hooks_test.ts, run_token_reload_queue_test.ts,
 * run_marker_token_reload_queue_test.ts): a runtime serving real HTTP on loopback with auth on, an
 * admin token and one operator's named token ('shift'), a request held at its turn while a reload
 * replaces the API tokens, and what the test reads afterwards (the audit trail's refusals).
 */
import assert from "node:assert/strict";
import type { ApiTokenConfig, Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

export const ADMIN = "admin-token-7e3c9a1f5b2d";
export const OPERATOR = "operator-token-4b8d2f6a0c1e";
/** The operator's named token, the one a reload removes, lowers or keeps. */
export const SHIFT: ApiTokenConfig = {
  name: "shift",
  role: "operator",
  token: OPERATOR,
  tokenEnv: "",
};
/** A viewer token a reload adds: the tokens are replaced, shift's kept as it was. */
export const NIGHT: ApiTokenConfig = {
  name: "night",
  role: "viewer",
  token: "night-token-9d1e5a3c7f0b",
  tokenEnv: "",
};

/** The http section: auth on, ADMIN the admin's token, SHIFT the one named token. */
export function tokenHttp(o: { exemptLoopback?: boolean } = {}): Partial<Config["http"]> {
  return {
    authEnabled: true,
    authToken: ADMIN,
    authExemptLoopback: o.exemptLoopback ?? false,
    tokens: [SHIFT],
  };
}

/** `path` of `rt`'s API with `token`: a POST of `body` as JSON, or a GET without one. */
export function fetchAs(
  rt: Kernel,
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return apiFetch(`http://127.0.0.1:${rt.http!.port}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Reloads `rt` with the API tokens `tokens`; asserts the reload refused nothing. */
export async function reloadTokens(rt: Kernel, tokens: readonly ApiTokenConfig[]): Promise<void> {
  const report = await rt.reload({ ...rt.config, http: { ...rt.config.http, tokens } });
  assert.deepEqual(report.refused, []);
}

/** The audit trail's entries (read with ADMIN over HTTP) of `action`s refused. */
// deno-lint-ignore no-explicit-any
export async function refusedEntries(rt: Kernel, action: string): Promise<any[]> {
  const audit = await (await fetchAs(rt, "/v0/audit", ADMIN)).json();
  // deno-lint-ignore no-explicit-any
  return audit.entries.filter((e: any) => e.action === action && e.outcome === "refused");
}

/**
 * Journal files whose appends to a path holding `pathPart` that `holds` picks wait for `release`
 * (`held` counts them); every other append is the real one.
 */
export class HeldAppends extends InterceptedAppends {
  held = 0;
  release: () => void = () => {};
  readonly #gate: Promise<void>;
  constructor(pathPart: string, holds: (text: string) => boolean) {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    super(pathPart, async (text, append) => {
      if (holds(text)) {
        this.held++;
        await this.#gate;
      }
      await append(text);
    });
    this.#gate = gate;
    this.release = open;
  }
}

/**
 * Makes `target[method]` count its calls (then do what it did): the count, read when asked. How a
 * test knows a request has reached the registry's queue.
 */
export function countCalls<T extends object, K extends keyof T>(
  target: T,
  method: K,
): () => number {
  // deno-lint-ignore no-explicit-any
  const real = (target[method] as any).bind(target);
  let calls = 0;
  // deno-lint-ignore no-explicit-any
  (target as any)[method] = (...args: unknown[]) => {
    calls++;
    return real(...args);
  };
  return () => calls;
}
