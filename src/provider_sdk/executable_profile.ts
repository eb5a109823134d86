/**
 * The anolis provider executable profile v1 (anolis-protocol, docs/profiles/
 * anolis-executable-profile-v1.md): the envelopes of the `--config-schema` (sec. 2) and
 * `--check-host` (sec. 6) verbs and the readiness keys of a startup host check (sec. 3). Output shapes
 * follow the reference SDK (anolis-provider-sdk, src/anolis/provider_sdk/config.cpp and
 * host_check.cpp): the same keys in the same order, so a client cannot tell the two apart.
 */

import { MAX_NAMED_IN_WARNING, quoteProviderText } from "../common/mod.ts";
import { PROVIDER_STATUS_MESSAGE_CHARS } from "../adpp/mod.ts";
import { statusMessageText } from "./_status_message.ts";

/** The `--config-schema` envelope convention this SDK emits (sec. 2). */
export const CONFIG_SCHEMA_VERSION = 1;

/** The `--check-host` envelope convention this SDK emits (sec. 6). */
export const CHECK_HOST_VERSION = 1;

/** The JSON Schema dialect a provider's config schema should declare in `$schema`. */
export const JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

/** Exit codes of `--check-host` (sec. 6). */
export const CheckHostExitCode = {
  /** No requirement is unmet (each is met or unknown). */
  NONE_UNMET: 0,
  /** At least one requirement is unmet. */
  UNMET: 1,
  /** The requirements could not be evaluated (invalid configuration); stdout is empty. */
  NOT_EVALUATED: 2,
} as const;

/** One of the CheckHostExitCode values. */
export type CheckHostExitCodeNumber = (typeof CheckHostExitCode)[keyof typeof CheckHostExitCode];

/** A JSON Schema object (provider-owned content; the SDK checks only that it is JSON). */
export type JsonSchema = { readonly [key: string]: unknown };

/** Options of configSchemaEnvelope. */
export interface ConfigSchemaEnvelopeOptions {
  /** The recommended `provider` key: the provider's name (as in Hello); empty or absent omits it. */
  readonly provider?: string;
  /**
   * Provider-specific extra string keys (e.g. `provider_version`), written after `provider` and
   * before `schema`, in this order. May not reuse a reserved key.
   */
  readonly extra?: Readonly<Record<string, string>>;
}

const RESERVED_SCHEMA_KEYS = new Set(["config_schema_version", "provider", "schema"]);

/**
 * The `--config-schema` output (sec. 2): one JSON object with `config_schema_version`, `provider`,
 * the extra keys and `schema`, in that order, indented by two spaces, plus a newline. Throws
 * TypeError for a schema that is not a JSON object (or holds something JSON cannot carry: a
 * non-finite number, undefined, a function) and for an extra key that collides with a reserved one.
 */
export function configSchemaEnvelope(
  schema: JsonSchema,
  options: ConfigSchemaEnvelopeOptions = {},
): string {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new TypeError("config schema: must be a JSON object");
  }
  assertJson(schema, "schema");
  const envelope: Record<string, unknown> = { config_schema_version: CONFIG_SCHEMA_VERSION };
  if (options.provider !== undefined && options.provider !== "") {
    envelope.provider = options.provider;
  }
  for (const [key, value] of Object.entries(options.extra ?? {})) {
    if (RESERVED_SCHEMA_KEYS.has(key)) {
      throw new TypeError(`config schema envelope: extra key '${key}' is reserved`);
    }
    if (typeof value !== "string") {
      throw new TypeError(`config schema envelope: extra key '${key}' must be a string`);
    }
    envelope[key] = value;
  }
  envelope.schema = schema;
  return JSON.stringify(envelope, null, 2) + "\n";
}

/** What a host requirement was found to be (sec. 6). */
export type HostRequirementStatus = "met" | "unmet" | "unknown";

/** One requirement a configuration implies for the host (sec. 6); its meaning is provider-owned. */
export interface HostRequirement {
  /** Non-empty, stable across releases (e.g. `i2c.bus_present`). */
  readonly id: string;
  /** `unknown`: the provider cannot tell on this host; does not fail the check. */
  readonly status: HostRequirementStatus;
  /** What was checked and found, in words an operator can act on. */
  readonly detail?: string;
  /** For `unmet`: what to change on the host. */
  readonly remedy?: string;
}

const STATUSES: ReadonlySet<string> = new Set(["met", "unmet", "unknown"]);

/** 1 when any requirement is unmet, else 0 (sec. 6: `unknown` does not fail the check). */
export function checkHostExitCode(requirements: readonly HostRequirement[]): 0 | 1 {
  return requirements.some((r) => r.status === "unmet")
    ? CheckHostExitCode.UNMET
    : CheckHostExitCode.NONE_UNMET;
}

/**
 * The `--check-host` output (sec. 6): one line of JSON with `check_host_version`, `provider` (omitted
 * when empty) and `requirements` (each `id`, `status`, then `detail` and `remedy` when not empty),
 * plus a newline. Throws TypeError for a requirement with an empty id or an unknown status.
 */
export function checkHostEnvelope(
  provider: string,
  requirements: readonly HostRequirement[],
): string {
  const envelope: Record<string, unknown> = { check_host_version: CHECK_HOST_VERSION };
  if (provider !== "") envelope.provider = provider;
  envelope.requirements = requirements.map((r, i) => {
    checkRequirement(r, i);
    const out: Record<string, string> = { id: r.id, status: r.status };
    if (r.detail !== undefined && r.detail !== "") out.detail = r.detail;
    if (r.remedy !== undefined && r.remedy !== "") out.remedy = r.remedy;
    return out;
  });
  return JSON.stringify(envelope) + "\n";
}

/**
 * The readiness diagnostics of a startup host check (sec. 3): `host_check` is `ok` or `unmet`, and
 * `host_unmet` (only when unmet) lists the unmet ids with their details, `id: detail; id: detail`.
 */
export function hostReadinessDiagnostics(
  requirements: readonly HostRequirement[],
): Record<string, string> {
  const unmet = unmetSummary(requirements);
  return unmet === "" ? { host_check: "ok" } : { host_check: "unmet", host_unmet: unmet };
}

/**
 * The unmet requirements as `id: detail; id: detail` ("" when none is unmet), cut to
 * PROVIDER_STATUS_MESSAGE_CHARS: it goes into GetHealth answers, NOT_FOUND messages and log lines.
 * Built bounded: it stops once past the bound (each id and detail taken only up to it), so
 * thousands of requirements with long details cost no more than the text kept -- joining them all
 * first could exceed the longest string a JS engine makes (a RangeError at start-up).
 */
export function unmetSummary(requirements: readonly HostRequirement[]): string {
  // One past the bound, so that statusMessageText still sees the text was longer and marks it.
  const room = PROVIDER_STATUS_MESSAGE_CHARS + 1;
  let out = "";
  for (const r of requirements) {
    if (out.length >= room) break;
    if (r.status !== "unmet") continue;
    if (out !== "") out += "; ";
    out += r.id.slice(0, room);
    if (r.detail) out += `: ${r.detail.slice(0, room)}`;
  }
  return statusMessageText(out);
}

/**
 * A configuration the provider rejects, with every problem found (each naming its key). Providers
 * built on `runProviderCli` throw it from `loadConfig`; each problem is logged on its own line.
 * `problems` keeps them all; `message` names the first MAX_NAMED_IN_WARNING, each cut to
 * PROVIDER_STATUS_MESSAGE_CHARS, then counts the rest (`; and 5 more problems (25 in all)`), as the
 * CLI logs them, so that a message built from thousands of problems stays bounded.
 */
export class ProviderConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(configProblemsText(problems));
    this.name = "ProviderConfigError";
    this.problems = problems;
  }
}

/** ProviderConfigError's message: its first problems, each cut, the rest counted. */
function configProblemsText(problems: readonly string[]): string {
  const named = problems.slice(0, MAX_NAMED_IN_WARNING).map(statusMessageText).join("; ");
  const rest = problems.length - MAX_NAMED_IN_WARNING;
  return rest > 0 ? `${named}; and ${rest} more problems (${problems.length} in all)` : named;
}

function checkRequirement(r: HostRequirement, index: number): void {
  if (typeof r.id !== "string" || r.id === "") {
    throw new TypeError(`host requirement ${index} has an empty id`);
  }
  if (!STATUSES.has(r.status)) {
    // The provider's text (any length, any character; the status maybe no string at all): cut and
    // quoted, as the runtime quotes a provider's text.
    const status: unknown = r.status;
    const got = typeof status === "string"
      ? quoteProviderText(status)
      : `a value of type ${typeof status}`;
    throw new TypeError(
      `host requirement ${
        quoteProviderText(r.id)
      }: status must be met, unmet or unknown, got ${got}`,
    );
  }
}

/** Throws TypeError naming the path of the first value JSON cannot carry faithfully. */
function assertJson(value: unknown, path: string): void {
  switch (typeof value) {
    case "string":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`config schema: ${path} is ${value}`);
      return;
    case "object":
      if (value === null) return;
      if (Array.isArray(value)) {
        value.forEach((v, i) => assertJson(v, `${path}[${i}]`));
        return;
      }
      for (const [k, v] of Object.entries(value)) assertJson(v, `${path}.${k}`);
      return;
    default:
      throw new TypeError(`config schema: ${path} is a ${typeof value}, not JSON`);
  }
}
