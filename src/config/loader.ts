/**
 * Loads the runtime YAML file: parse with positions -> structure layer (JSON Schema) -> semantic
 * layer -> one immutable `Config`, or every diagnostic found. Pure: file reading, the environment
 * and PATH lookups are supplied by the caller (src/main.ts), so nothing here touches Deno.*.
 */
import { posix } from "node:path";
import { Checker, describeValue, type Obj } from "./_checker.ts";
import { readConfig } from "./_semantic.ts";
import { formatPath, type Path, YamlSource } from "./_source.ts";
import { validateStructure } from "./_structure.ts";
import type { Config, Diagnostic } from "./types.ts";

/** What `loadConfig` needs from the host. */
export interface LoadConfigOptions {
  /** Absolute path of the file (relative paths inside it are resolved against its folder). */
  readonly path: string;
  /** "check": `--check-config` (a missing token is a warning); "start": the service starts. */
  readonly mode: "check" | "start";
  readonly env: { readonly RUNTIME_API_TOKEN?: string; readonly INFLUXDB_TOKEN?: string };
  /** Whether a regular file exists at an absolute path. */
  readonly fileExists: (absPath: string) => boolean;
  /** What is at a path that is not a regular file ("a directory", ...); null when nothing is. */
  readonly pathKind?: (absPath: string) => string | null;
  /** Whether a bare command name is found on PATH. */
  readonly commandExists: (command: string) => boolean;
  /** Working directory (the default data_dir lives under it). */
  readonly cwd: string;
}

/** The outcome of a load: the config (null on any error) and every diagnostic, in file order. */
export interface LoadConfigResult {
  readonly config: Config | null;
  readonly diagnostics: Diagnostic[];
}

/** Parses and validates a runtime configuration file's text. */
export function loadConfig(text: string, options: LoadConfigOptions): LoadConfigResult {
  const file = options.path;
  const parsed = YamlSource.parse(text, file);
  const diagnostics = [...parsed.diagnostics];
  if (parsed.source === null) return { config: null, diagnostics: sorted(diagnostics) };
  const source = parsed.source;
  const data = parsed.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    const got = data === null || data === undefined ? "an empty file" : describeValue(data);
    diagnostics.push({
      severity: "error",
      path: "",
      message: `the configuration root must be a mapping of sections, got ${got}`,
      ...source.position([]),
      file,
    });
    return { config: null, diagnostics: sorted(diagnostics) };
  }

  const checker = new Checker(source, file);
  const config = readConfig(data as Obj, {
    checker,
    source,
    mode: options.mode,
    env: options.env,
    fileExists: options.fileExists,
    ...(options.pathKind ? { pathKind: options.pathKind } : {}),
    commandExists: options.commandExists,
    cwd: options.cwd,
    configPath: options.path,
    configDir: posix.dirname(options.path),
  });
  diagnostics.push(...checker.diagnostics);

  // The semantic layer names the problem better; a schema error is kept only where the semantic
  // layer found nothing at the same key, and once per key.
  const reported = new Set(
    checker.diagnostics.filter((d) => d.severity === "error").map((d) => d.path),
  );
  for (const e of validateStructure(data)) {
    const path = formatPath(e.path);
    if (reported.has(path)) continue;
    reported.add(path);
    diagnostics.push(structureDiagnostic(source, e.path, e.message, file));
  }

  const hasError = diagnostics.some((d) => d.severity === "error");
  return { config: hasError ? null : deepFreeze(config), diagnostics: sorted(diagnostics) };
}

function structureDiagnostic(
  source: YamlSource,
  path: Path,
  message: string,
  file: string,
): Diagnostic {
  return { severity: "error", path: formatPath(path), message, ...source.position(path), file };
}

/** File order (line, column); stable for diagnostics at the same spot. */
function sorted(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.sort((a, b) => a.line - b.line || a.column - b.column);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
