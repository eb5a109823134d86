import { loadConfig, type LoadConfigResult } from "../../src/config/mod.ts";

/** Absolute path every inline fixture pretends to live at. */
export const CONFIG_PATH = "/etc/rig/runtime.yaml";
/** One valid provider on one line, so fixtures can put it last without shifting line numbers. */
export const PROV = "providers: [{id: p0, command: prov}]";

export interface LoadOverrides {
  mode?: "check" | "start";
  /** `--check-config --strict` (with mode "check"). */
  strict?: boolean;
  /** `--check-config`'s e-stop review (LoadConfigOptions.safetyReview). */
  safetyReview?: boolean;
  env?: { RUNTIME_API_TOKEN?: string; INFLUXDB_TOKEN?: string };
  /** Variables `http.tokens[].token_env` may name (all others are unset). */
  secretEnv?: Record<string, string>;
  /** Absolute paths that exist; default: the behavior tree and TLS files used by fixtures. */
  files?: readonly string[];
  /** Bare commands found on PATH; default: `prov` and `deno`. */
  commands?: readonly string[];
  /** Why the file system did not answer about a path or command (LoadConfigOptions.unanswered). */
  unanswered?: (kind: "path" | "command", name: string) => string | null;
}

/** Loads inline YAML (a leading newline is dropped so line 1 is the first fixture line). */
export function load(yaml: string, o: LoadOverrides = {}): LoadConfigResult {
  const files = new Set(
    o.files ?? ["/etc/rig/bt.xml", "/etc/rig/tls/cert.pem", "/etc/rig/tls/key.pem"],
  );
  const commands = new Set(o.commands ?? ["prov", "deno"]);
  return loadConfig(yaml.replace(/^\n/, ""), {
    path: CONFIG_PATH,
    mode: o.mode ?? "check",
    strict: o.strict ?? false,
    safetyReview: o.safetyReview ?? false,
    env: o.env ?? {},
    secretEnv: (name) => o.secretEnv?.[name],
    fileExists: (p) => files.has(p),
    commandExists: (c) => commands.has(c),
    cwd: "/var/lib/rig",
    ...(o.unanswered ? { unanswered: o.unanswered } : {}),
  });
}

/** Diagnostics as `severity path @line`, sorted, for exact comparison. */
export function summary(result: LoadConfigResult): string[] {
  return result.diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}`).sort();
}
