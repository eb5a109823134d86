/** Shared pieces of the deployment tests: repo paths, the compile task's permissions, lines. */

/** Repository root (absolute, with a trailing slash). */
export const REPO = new URL("../../", import.meta.url).pathname;

/** Path of a file in the repository. */
export function repoPath(relative: string): string {
  return `${REPO}${relative}`;
}

/**
 * The `--allow-env=` list of the `compile` task in deno.json: the environment variables the single
 * binary may read (any other reads as unset: `--ignore-env`). The tests run the runtime with the
 * task's permissions (tests/helpers/compiled_permissions.ts).
 */
export function compileEnvAllowList(task = "compile"): string {
  const denoJson = JSON.parse(Deno.readTextFileSync(repoPath("deno.json")));
  const line: unknown = denoJson.tasks?.[task];
  if (typeof line !== "string") throw new Error(`deno.json: task '${task}' is missing`);
  const match = line.match(/--allow-env=(\S+)/);
  if (!match) throw new Error(`deno.json: task '${task}' has no --allow-env=<list>`);
  return match[1]!;
}

/** Reads a byte stream as text lines; `next()` resolves null at the end of the stream. */
export class LineReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next complete line (without its newline), or null at the end of the stream. */
  async next(): Promise<string | null> {
    for (;;) {
      const nl = this.#buffer.indexOf("\n");
      if (nl >= 0) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) {
        if (this.#buffer === "") return null;
        const rest = this.#buffer;
        this.#buffer = "";
        return rest;
      }
      this.#buffer += value;
    }
  }

  /** Reads (and discards) the rest of the stream. */
  async drain(): Promise<void> {
    while ((await this.next()) !== null) {
      // discard
    }
  }
}
