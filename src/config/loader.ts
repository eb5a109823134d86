/**
 * Loads the runtime YAML file: bounded read -> strict UTF-8 -> parse with positions -> structure
 * layer (JSON Schema) -> semantic layer -> one immutable `Config`, or every diagnostic found, with
 * every secret scrubbed. Pure: file reading, the environment and PATH lookups are supplied by the
 * caller (src/main.ts), so nothing here touches Deno.*.
 */
import { dirnameOf, resolvePath } from "../common/mod.ts";
import { Checker, describeValue, isPlainMapping, type Obj } from "./_checker.ts";
import { scrubDiagnostics, secretTexts } from "./_secrets.ts";
import { reviewSafeState } from "./_safety_review.ts";
import { readConfig } from "./_semantic.ts";
import { decodeUtf8, formatPath, type Path, YamlSource } from "./_source.ts";
import { validateStructure } from "./_structure.ts";
import type { Config, Diagnostic } from "./types.ts";

/**
 * Largest configuration file the runtime reads: 2 MiB, some 250 times examples/full.yaml. A larger
 * file, or anything that is not a regular file (a FIFO, a device such as /dev/zero), is refused
 * before it is read, with exit code 2. The bound also caps what a check costs: the YAML parser
 * needs up to ~150 bytes of memory per byte of dense flow-style input (~300 MB at the limit).
 */
export const MAX_CONFIG_FILE_BYTES = 2 * 1024 * 1024;

/** What `loadConfig` needs from the host. */
export interface LoadConfigOptions {
  /** Absolute path of the file (relative paths inside it are resolved against its folder). */
  readonly path: string;
  /**
   * "check": `--check-config`; "start": the service starts. What the checking machine may lack
   * (behavior tree, TLS files, provider command, API token) is a warning under "check", an error
   * under "check" with `strict` and under "start" (the provider command: start-up reports it).
   */
  readonly mode: "check" | "start";
  /**
   * `--check-config --strict`: environment problems and unknown keys are errors (ignored under
   * "start").
   */
  readonly strict?: boolean;
  /**
   * `--check-config`: also review the e-stop from the file alone and warn when it would command
   * or verify nothing (src/config/_safety_review.ts). Start-up reviews it with the providers'
   * inventory instead (the e-stop plan).
   */
  readonly safetyReview?: boolean;
  readonly env: {
    readonly RUNTIME_API_TOKEN?: string | undefined;
    readonly INFLUXDB_TOKEN?: string | undefined;
  };
  /** The value of an environment variable named by `http.tokens[].token_env` (undefined: unset). */
  readonly secretEnv?: (name: string) => string | undefined;
  /** Whether a regular file exists at an absolute path. */
  readonly fileExists: (absPath: string) => boolean;
  /** What is at a path that is not a regular file ("a directory", ...); null when nothing is. */
  readonly pathKind?: (absPath: string) => string | null;
  /** The permission bits of the regular file at an absolute path; null when unknown. */
  readonly fileMode?: (absPath: string) => number | null;
  /** Whether a bare command name is found on PATH. */
  readonly commandExists: (command: string) => boolean;
  /**
   * Why the file system gave no answer in time about a path the file names (`kind` "path": the
   * absolute path) or a bare command's PATH lookup ("command": the name); null when it answered.
   * The key naming it gets an error with this text, whatever the mode (loadConfigFileAsking: a
   * reload asks off the event loop's thread, each question bounded). Absent: every one answered.
   */
  readonly unanswered?: (kind: "path" | "command", name: string) => string | null;
  /** Working directory (the default data_dir lives under it). */
  readonly cwd: string;
  /**
   * Test hook: receives the work spent locating diagnostics (YAML nodes visited by position
   * lookups, error-path checks), a deterministic measure that must grow linearly with the file.
   */
  readonly onLookupWork?: (steps: number) => void;
}

/** The outcome of a load: the config (null on any error) and every diagnostic, in file order. */
export interface LoadConfigResult {
  readonly config: Config | null;
  readonly diagnostics: Diagnostic[];
  /**
   * Line and column of a key of the file (its closest existing parent when missing), for a
   * diagnostic a later check makes (`--check-config`'s TLS files); absent when it did not parse.
   */
  readonly positionOf?: (path: readonly (string | number)[]) => { line: number; column: number };
}

/** What a bounded file read gives: the bytes, or why the file was refused (for the message). */
export type BoundedFileRead =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly message: string };

/** `loadConfig` options plus the host's bounded reader. */
export interface LoadConfigFileOptions extends LoadConfigOptions {
  /**
   * Reads `absPath` if it is a regular file of at most `maxBytes` bytes, reading no more than
   * `maxBytes + 1` bytes whatever the file does meanwhile (src/host: `readRegularFile`).
   */
  readonly readFile: (absPath: string, maxBytes: number) => Promise<BoundedFileRead>;
}

/** A loaded file, or a file that could not be read at all (exit code 2: nothing to diagnose). */
export type LoadConfigFileResult =
  | ({ readonly readable: true } & LoadConfigResult)
  | { readonly readable: false; readonly message: string };

/**
 * Reads and loads the configuration file at `options.path`. The one way the runtime reads its
 * configuration (`--check-config`, `--config`, and any future reload): the size bound and the
 * regular-file rule hold for every caller.
 */
export async function loadConfigFile(
  options: LoadConfigFileOptions,
): Promise<LoadConfigFileResult> {
  const read = await readBounded(options);
  if (!read.ok) return { readable: false, message: read.message };
  return { readable: true, ...loadConfig(read.bytes, options) };
}

/**
 * The file at `options.path` read through `options.readFile`, refused when larger than
 * MAX_CONFIG_FILE_BYTES (or not a regular file): the bound every load holds.
 */
async function readBounded(
  options: Pick<LoadConfigFileOptions, "path" | "readFile">,
): Promise<BoundedFileRead> {
  const read = await options.readFile(options.path, MAX_CONFIG_FILE_BYTES);
  if (read.ok && read.bytes.length > MAX_CONFIG_FILE_BYTES) {
    // The reader promised the bound; hold it here too rather than parse an unbounded buffer.
    return {
      ok: false,
      message: `larger than the ${MAX_CONFIG_FILE_BYTES}-byte limit (${read.bytes.length} bytes)`,
    };
  }
  return read;
}

/**
 * Parses and validates a runtime configuration: the file's bytes (strict UTF-8) or its text.
 * Diagnostics never contain a value held by a secret-bearing key (`http.auth_token`, ...).
 */
export function loadConfig(
  input: string | Uint8Array,
  options: LoadConfigOptions,
): LoadConfigResult {
  const parsed = parse(input, options.path);
  if ("config" in parsed) return parsed;
  return scrubbed(validate(parsed, options));
}

/** A parsed file: its source and data, and what the parse said. */
interface Parsed {
  readonly source: YamlSource;
  readonly data: Obj;
  readonly diagnostics: readonly Diagnostic[];
  readonly secrets: readonly string[];
}

/** The file parsed to a mapping, or the result that says why it is not one (no config). */
function parse(input: string | Uint8Array, file: string): Parsed | LoadConfigResult {
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    const decoded = decodeUtf8(input);
    if (!decoded.ok) {
      return {
        config: null,
        diagnostics: [{
          severity: "error",
          path: "",
          message: `the file is not valid UTF-8: invalid byte at byte offset ${decoded.offset} ` +
            "(save the file as UTF-8)",
          ...decoded.position,
          file,
        }],
      };
    }
    text = decoded.text;
  }
  const parsed = YamlSource.parse(text, file);
  const diagnostics = [...parsed.diagnostics];
  if (parsed.source === null) return { config: null, diagnostics: sorted(diagnostics) };
  const source = parsed.source;
  const data = parsed.data;
  const secrets = secretTexts(data, source.secretScalarTexts());
  if (!isPlainMapping(data)) {
    const got = data === null || data === undefined ? "an empty file" : describeValue(data);
    diagnostics.push({
      severity: "error",
      path: "",
      message: `the configuration root must be a mapping of sections, got ${got}`,
      ...source.position([]),
      file,
    });
    return scrubbed({ config: null, diagnostics: sorted(diagnostics), secrets });
  }
  return { source, data: data as Obj, diagnostics, secrets };
}

/** The result with every secret scrubbed from its diagnostics. */
function scrubbed(result: LoadConfigResult & { secrets: readonly string[] }): LoadConfigResult {
  return {
    config: result.config,
    diagnostics: scrubDiagnostics(result.diagnostics, result.secrets),
    ...(result.positionOf ? { positionOf: result.positionOf } : {}),
  };
}

/**
 * Validates a parsed file. Reads it only: a file may be validated again (loadConfigFileAsking).
 */
function validate(
  parsed: Parsed,
  options: LoadConfigOptions,
): LoadConfigResult & { secrets: readonly string[] } {
  const file = options.path;
  const { source, data, secrets } = parsed;
  const diagnostics = [...parsed.diagnostics];
  const strict = options.mode === "check" && (options.strict ?? false);
  const checker = new Checker(source, file, { unknownKeys: strict ? "error" : "warning" });
  const config = readConfig(data, {
    checker,
    source,
    mode: options.mode,
    strict: options.strict ?? false,
    env: options.env,
    ...(options.secretEnv ? { secretEnv: options.secretEnv } : {}),
    fileExists: options.fileExists,
    ...(options.pathKind ? { pathKind: options.pathKind } : {}),
    ...(options.fileMode ? { fileMode: options.fileMode } : {}),
    commandExists: options.commandExists,
    ...(options.unanswered ? { unanswered: options.unanswered } : {}),
    cwd: options.cwd,
    configPath: options.path,
    configDir: resolvePath(options.cwd, dirnameOf(options.path)),
  });
  // One at a time: spreading a huge list into push() overflows the call stack (160k arguments).
  for (const d of checker.diagnostics) diagnostics.push(d);

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

  let hasError = diagnostics.some((d) => d.severity === "error");
  if (options.safetyReview && !hasError) {
    // Only on a valid file: the review reads the typed configuration.
    const review = new Checker(source, file);
    const safety = data.safety;
    reviewSafeState(config, review, {
      safetyGiven: "safety" in data,
      safeStateGiven: safety !== null && typeof safety === "object" && "safe_state" in safety,
    });
    for (const d of review.diagnostics) diagnostics.push(d);
    hasError = diagnostics.some((d) => d.severity === "error");
  }
  options.onLookupWork?.(source.lookupSteps + checker.lookupSteps);
  return {
    config: hasError ? null : deepFreeze(config),
    diagnostics: sorted(diagnostics),
    secrets,
    positionOf: (path) => source.position([...path]),
  };
}

/** What is at a path a file names, as the asking load is told (loadConfigFileAsking). */
export type PathAnswer =
  /** A regular file and its permission bits (null: unknown). */
  | { readonly kind: "file"; readonly mode: number | null }
  /** Something that is not a regular file: `what` says what ("a directory", ...). */
  | { readonly kind: "other"; readonly what: string }
  | { readonly kind: "none" }
  /** No answer came in time: `why` says so (the key naming the path gets an error). */
  | { readonly kind: "unanswered"; readonly why: string };

/** Whether a bare command is on PATH, as the asking load is told. */
export type CommandAnswer =
  | { readonly kind: "found" }
  | { readonly kind: "none" }
  | { readonly kind: "unanswered"; readonly why: string };

/**
 * The file-system questions of a check, answered asynchronously: a reload asks them off the event
 * loop's thread, each bounded (src/app/kernel.ts, reloadPathAnswers). Never rejects.
 */
export interface PathQuestions {
  /** What is at an absolute path (one stat answers whether a file is there, what, its mode). */
  readonly stat: (absPath: string) => Promise<PathAnswer>;
  /** Whether a bare command is an executable file in a PATH folder. */
  readonly commandExists: (command: string) => Promise<CommandAnswer>;
}

/**
 * Questions of one asking load in flight at once, at most: a file naming thousands of paths on a
 * hung mount must not take every worker thread of the process (each stat that hangs holds one
 * until it returns; the journals' writes need them too). A reload's reads of a behavior tree and
 * its includes are bounded by it too (automation/bt readTreeFiles).
 */
export const PATH_QUESTIONS_IN_FLIGHT = 8;

/** loadConfigFile's options, the file-system questions answered asynchronously by `ask`. */
export interface LoadConfigFileAskingOptions extends
  Omit<
    LoadConfigFileOptions,
    "fileExists" | "pathKind" | "fileMode" | "commandExists" | "unanswered"
  > {
  readonly ask: PathQuestions;
}

/**
 * As loadConfigFile, for a caller whose file-system questions must not block the event loop's
 * thread (a reload, while the providers and the e-stop run): asks first, then answers from memory.
 * The file is validated with every question recorded and none answered yet (each given a
 * placeholder answer); the questions are then asked through `ask`, PATH_QUESTIONS_IN_FLIGHT at a
 * time; and the file is validated again with the answers, until a validation asks nothing new
 * (one stat answers all a key asks of its path, so that is the second; bounded in any case by the
 * paths the file names). Once one question goes unanswered, those not asked yet are not asked:
 * they are not checked (`skipped`, for the caller to say), the load fails on the one unanswered.
 */
export async function loadConfigFileAsking(
  options: LoadConfigFileAskingOptions,
): Promise<LoadConfigFileResult & { readonly skipped?: number }> {
  const read = await readBounded(options);
  if (!read.ok) return { readable: false, message: read.message };
  const parsed = parse(read.bytes, options.path);
  if ("config" in parsed) return { readable: true, ...parsed };
  const stats = new Map<string, PathAnswer | "skipped">();
  const commands = new Map<string, CommandAnswer | "skipped">();
  /** A question went unanswered: none is asked from then on. */
  let hung = false;
  for (;;) {
    const newPaths = new Set<string>();
    const newCommands = new Set<string>();
    const stat = (p: string): PathAnswer | "skipped" | undefined => {
      const known = stats.get(p);
      if (known === undefined) newPaths.add(p);
      return known;
    };
    const command = (c: string): CommandAnswer | "skipped" | undefined => {
      const known = commands.get(c);
      if (known === undefined) newCommands.add(c);
      return known;
    };
    // Not known yet, skipped or unanswered: as if there, so no other diagnostic is made of it.
    const result = validate(parsed, {
      ...options,
      fileExists: (p) => {
        const a = stat(p);
        return typeof a !== "object" || a.kind === "file" || a.kind === "unanswered";
      },
      pathKind: (p) => {
        const a = stat(p);
        return typeof a === "object" && a.kind === "other" ? a.what : null;
      },
      fileMode: (p) => {
        const a = stat(p);
        return typeof a === "object" && a.kind === "file" ? a.mode : null;
      },
      commandExists: (c) => {
        const a = command(c);
        return typeof a !== "object" || a.kind !== "none";
      },
      unanswered: (kind, name) => {
        const a = kind === "path" ? stat(name) : command(name);
        return typeof a === "object" && a.kind === "unanswered" ? a.why : null;
      },
    });
    if (newPaths.size + newCommands.size === 0) {
      const skipped = [...stats.values(), ...commands.values()].filter((a) => a === "skipped");
      return {
        readable: true,
        ...scrubbed(result),
        ...(skipped.length > 0 ? { skipped: skipped.length } : {}),
      };
    }
    const questions = [
      ...[...newPaths].map((p) => async () => {
        stats.set(p, await options.ask.stat(p));
        return stats.get(p) as PathAnswer;
      }),
      ...[...newCommands].map((c) => async () => {
        commands.set(c, await options.ask.commandExists(c));
        return commands.get(c) as CommandAnswer;
      }),
    ];
    let next = 0;
    const worker = async () => {
      while (next < questions.length && !hung) {
        const answer = await questions[next++]!();
        if (answer.kind === "unanswered") hung = true;
      }
    };
    await Promise.all(Array.from({ length: PATH_QUESTIONS_IN_FLIGHT }, worker));
    for (const p of newPaths) if (!stats.has(p)) stats.set(p, "skipped");
    for (const c of newCommands) if (!commands.has(c)) commands.set(c, "skipped");
  }
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
