/**
 * The journal file port (src/journal/journal_files.ts) over memory: files are byte arrays in a
 * map, every operation completes without I/O. For a runtime on a ManualClock driven by
 * tests/helpers/clock.ts runUntil, whose work must all be promise callbacks (a real write would
 * let virtual time run on while it is under way). Journal behaviour on real files is tested in
 * tests/journal, tests/audit and tests/runs.
 */
import type { JournalAppendHandle, JournalFiles, JournalLine } from "../../src/journal/mod.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const NEWLINE = 10;

/** Journal files held in memory (paths as given; directories are prefixes). */
export class MemoryFiles implements JournalFiles {
  readonly #files = new Map<string, Uint8Array>();
  readonly #dirs = new Set<string>();

  /** The text of the file at `path` ("" when missing). */
  text(path: string): string {
    return decoder.decode(this.#files.get(path) ?? new Uint8Array());
  }

  ensureDir(path: string): Promise<void> {
    this.#dirs.add(path.replace(/\/+$/, ""));
    return Promise.resolve();
  }

  openAppend(path: string): Promise<JournalAppendHandle> {
    if (!this.#files.has(path)) this.#files.set(path, new Uint8Array());
    let open = true;
    return Promise.resolve({
      append: (text: string) => {
        if (!open) return Promise.reject(new Deno.errors.BadResource("file closed"));
        const old = this.#files.get(path) ?? new Uint8Array();
        const add = encoder.encode(text);
        const next = new Uint8Array(old.length + add.length);
        next.set(old);
        next.set(add, old.length);
        this.#files.set(path, next);
        return Promise.resolve();
      },
      sync: () => Promise.resolve(),
      truncate: (size: number) => {
        if (!open) return Promise.reject(new Deno.errors.BadResource("file closed"));
        this.#files.set(path, (this.#files.get(path) ?? new Uint8Array()).slice(0, size));
        return Promise.resolve();
      },
      close: () => void (open = false),
    });
  }

  endsWithNewline(path: string): Promise<boolean> {
    const bytes = this.#files.get(path);
    return Promise.resolve(!bytes || bytes.length === 0 || bytes[bytes.length - 1] === NEWLINE);
  }

  async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    for await (const line of this.readLinesAt(path, { maxLineBytes, startByte: 0 })) {
      yield line.text;
    }
  }

  async *readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncGenerator<JournalLine> {
    const bytes = this.#files.get(path);
    if (!bytes) return;
    let start = options.startByte;
    while (start < bytes.length) {
      const nl = bytes.indexOf(NEWLINE, start);
      const terminated = nl >= 0;
      const end = terminated ? nl + 1 : bytes.length;
      const body = bytes.subarray(start, terminated ? nl : end);
      const text = decoder.decode(body.subarray(0, Math.min(body.length, options.maxLineBytes)));
      yield { text, start, end, terminated };
      start = end;
    }
  }

  fileSize(path: string): Promise<number> {
    return Promise.resolve(this.#files.get(path)?.length ?? 0);
  }

  remove(path: string): Promise<void> {
    this.#files.delete(path);
    return Promise.resolve();
  }

  rename(from: string, to: string): Promise<void> {
    const data = this.#files.get(from);
    if (data === undefined) return Promise.reject(new Deno.errors.NotFound(from));
    this.#files.set(to, data);
    this.#files.delete(from);
    return Promise.resolve();
  }

  listNames(dir: string): Promise<string[]> {
    const prefix = `${dir.replace(/\/+$/, "")}/`;
    const names = new Set<string>();
    for (const p of [...this.#files.keys(), ...this.#dirs]) {
      if (p.startsWith(prefix)) names.add((p.slice(prefix.length).split("/")[0])!);
    }
    return Promise.resolve([...names].filter((n) => n !== ""));
  }
}

/**
 * MemoryFiles that records, in order, the calls on the files `watched` picks (`"<op> <name>"`,
 * the name without its folder; ops remove, open, truncate, append, sync, close, rename), and
 * whose `failing` call of them rejects (EIO) -- and whose close throws while `closeThrows` is
 * set: a recording fake of the port, for the tests of
 * replaceWhole and of its users.
 */
export class RecordingMemoryFiles extends MemoryFiles {
  readonly calls: string[] = [];
  /** The op whose calls on watched files reject while set. */
  failing: "open" | "append" | "sync" | "rename" | null = null;
  /** While set, a close of a watched file throws (EBADF) once the handle is let go. */
  closeThrows = false;
  readonly #watched: (path: string) => boolean;

  constructor(watched: (path: string) => boolean) {
    super();
    this.#watched = watched;
  }

  /** Records `op` on `path` when watched; rejects when it is the `failing` op. */
  #call(op: string, path: string, to = ""): Promise<void> {
    if (!this.#watched(path)) return Promise.resolve();
    const name = (p: string) => p.slice(p.lastIndexOf("/") + 1);
    this.calls.push(`${op} ${name(path)}${to === "" ? "" : ` ${name(to)}`}`);
    if (op === this.failing) return Promise.reject(new Error(`EIO: ${op} failed (os error 5)`));
    return Promise.resolve();
  }

  override async remove(path: string): Promise<void> {
    await this.#call("remove", path);
    await super.remove(path);
  }

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    await this.#call("open", path);
    const h = await super.openAppend(path);
    return {
      append: (text) => this.#call("append", path).then(() => h.append(text)),
      sync: () => this.#call("sync", path).then(() => h.sync()),
      truncate: (size) => this.#call("truncate", path).then(() => h.truncate(size)),
      close: () => {
        if (this.#watched(path)) this.calls.push(`close ${path.slice(path.lastIndexOf("/") + 1)}`);
        h.close();
        if (this.closeThrows && this.#watched(path)) throw new Error("EBADF: close failed");
      },
    };
  }

  override async rename(from: string, to: string): Promise<void> {
    await this.#call("rename", from, to);
    await super.rename(from, to);
  }
}
