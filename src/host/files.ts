import { errorMessage, type Logger } from "../common/mod.ts";

/**
 * Most bytes `readFileBytes` reads: a behavior tree file or one it includes, a PEM file of the
 * Sparkplug link or the HTTP server (those are read again at a reload to say whether they changed).
 * A bound, not a format limit: the largest tree shipped is a few KiB, a PEM chain some tens.
 */
export const READ_FILE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Reads a whole regular file as bytes (behavior trees: the digest covers the exact file bytes),
 * synchronously, for the callers that read at start and at a reload on the event loop's thread.
 * So it must never wait: the path is stat'ed first and a FIFO, a device or a directory is refused
 * without being opened (a FIFO without a writer would block the thread, and with it the API and the
 * e-stop, for ever; /dev/zero would never end); a file over `maxBytes` is refused, and the open
 * file is checked again and read only up to `maxBytes + 1` bytes, so a path swapped for a device or
 * a file that grows after the stat is refused too. Only a path swapped for a FIFO in the
 * microseconds between the stat and the open could still block: a synchronous open has no bound
 * (readRegularFile has one, for the configuration file). Throws an Error saying why.
 */
export function readFileBytes(path: string, maxBytes = READ_FILE_MAX_BYTES): Uint8Array {
  const refuse = (info: Deno.FileInfo) => {
    const refused = checkRegular(info, maxBytes);
    if (refused !== null && !refused.ok) throw new Error(refused.message);
  };
  refuse(Deno.statSync(path));
  using file = Deno.openSync(path, { read: true });
  const info = file.statSync();
  refuse(info);
  let buffer = new Uint8Array(Math.min(info.size, maxBytes) + 1);
  let length = 0;
  while (length <= maxBytes) {
    if (length === buffer.length) buffer = grown(buffer, maxBytes);
    const n = file.readSync(buffer.subarray(length));
    if (n === null) return buffer.slice(0, length);
    length += n;
  }
  throw new Error(grewPast(maxBytes));
}

/** What `readRegularFile` gives: the bytes, or why the file was refused (a message for people). */
export type RegularFileRead =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly message: string };

/** Chunk in which `readRegularFile` grows its buffer when the file is larger than stat said. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Bound on opening a file that stat showed to be regular. Only a path swapped for a FIFO between
 * the stat and the open can make open(2) wait; that wait is cut off here.
 */
export const REGULAR_FILE_OPEN_TIMEOUT_MS = 2000;

/**
 * Reads a regular file of at most `maxBytes` bytes. The path is stat'ed first (a FIFO, a device
 * or a directory is refused without being opened, so a FIFO without a writer cannot hang us), the
 * open is bounded (REGULAR_FILE_OPEN_TIMEOUT_MS) and the open file is checked again, so a path
 * swapped after the stat cannot slip through; then at most `maxBytes + 1` bytes are read, so a
 * file that grows meanwhile (or a /proc file whose stat size is 0) is still bounded.
 *
 * Deno APIs only: importing node:fs for O_NONBLOCK cost ~7 MB of resident memory at start-up.
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<RegularFileRead> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    return { ok: false, message: openErrorMessage(e) };
  }
  const refused = checkRegular(info, maxBytes);
  if (refused) return refused;
  const opening = Deno.open(path, { read: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((r) => {
    timer = setTimeout(() => r("timeout"), REGULAR_FILE_OPEN_TIMEOUT_MS);
  });
  let file: Deno.FsFile;
  try {
    const opened = await Promise.race([opening, timedOut]);
    if (opened === "timeout") {
      opening.then((f) => f.close(), () => {});
      return {
        ok: false,
        message: `could not be opened within ${REGULAR_FILE_OPEN_TIMEOUT_MS} ms ` +
          "(replaced by a FIFO or a device?)",
      };
    }
    file = opened;
  } catch (e) {
    return { ok: false, message: openErrorMessage(e) };
  } finally {
    clearTimeout(timer);
  }
  try {
    const again = checkRegular(await file.stat(), maxBytes);
    if (again) return again;
    let buffer = new Uint8Array(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    while (length <= maxBytes) {
      if (length === buffer.length) buffer = grown(buffer, maxBytes);
      const n = await file.read(buffer.subarray(length));
      if (n === null) return { ok: true, bytes: buffer.subarray(0, length) };
      length += n;
    }
    return { ok: false, message: grewPast(maxBytes) };
  } catch (e) {
    return { ok: false, message: errorMessage(e) };
  } finally {
    file.close();
  }
}

function checkRegular(info: Deno.FileInfo, maxBytes: number): RegularFileRead | null {
  if (!info.isFile) return { ok: false, message: `not a regular file (${fileKind(info)})` };
  if (info.size > maxBytes) {
    return { ok: false, message: `too large: ${info.size} bytes, the limit is ${limit(maxBytes)}` };
  }
  return null;
}

/** `buffer` grown by READ_CHUNK_BYTES, to at most `maxBytes + 1` (the byte that says "too large"). */
function grown(buffer: Uint8Array<ArrayBuffer>, maxBytes: number): Uint8Array<ArrayBuffer> {
  const next = new Uint8Array(Math.min(buffer.length + READ_CHUNK_BYTES, maxBytes + 1));
  next.set(buffer);
  return next;
}

function grewPast(maxBytes: number): string {
  return `too large: it grew past the limit of ${limit(maxBytes)} while being read`;
}

function limit(maxBytes: number): string {
  const mib = maxBytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${maxBytes} bytes (${mib} MiB)` : `${maxBytes} bytes`;
}

/** A short name for what a non-regular path is. */
export function fileKind(info: Deno.FileInfo): string {
  if (info.isDirectory) return "a directory";
  if (info.isSymlink) return "a symbolic link";
  if (info.isFifo) return "a FIFO";
  if (info.isSocket) return "a socket";
  if (info.isCharDevice) return "a character device";
  if (info.isBlockDevice) return "a block device";
  return "not a regular file";
}

function openErrorMessage(e: unknown): string {
  if (e instanceof Deno.errors.NotFound) return "no such file";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  return errorMessage(e);
}

/** Most bytes of a small state file `smallStateFile` reads (a bdSeq is at most 3 digits). */
const SMALL_STATE_FILE_MAX_BYTES = 64;

/** How a folder is opened to fsync it (Deno.open; tests inject one that fails). */
export type OpenFolder = (dir: string) => Promise<{ sync(): Promise<void>; close(): void }>;

/**
 * fsyncs the folder of a file renamed into it, so that the rename survives a power cut (the new
 * name is durable only once its folder is; until the file system commits it, a cut brings the old
 * file back). Best effort: a folder that cannot be synced leaves the rename standing (durable
 * when the file system commits it), but each failure is counted (`failures`) and the first is
 * said (one WARN, with its folder and error), so a disk that cannot sync is visible.
 */
export class FolderSync {
  readonly #open: OpenFolder;
  #log: Pick<Logger, "warn"> | null;
  /** The WARN of a failure before a logger was given (said once one is). */
  #unsaid: string | null = null;
  /** Folder fsyncs that failed since start. */
  failures = 0;

  constructor(o: { readonly open?: OpenFolder; readonly log?: Pick<Logger, "warn"> } = {}) {
    this.#open = o.open ?? ((dir) => Deno.open(dir, { read: true }));
    this.#log = o.log ?? null;
  }

  /** Where the first failure is said (the process's logger, given by the composition root). */
  setLog(log: Pick<Logger, "warn">): void {
    this.#log = log;
    if (this.#unsaid !== null) log.warn(this.#unsaid);
    this.#unsaid = null;
  }

  /** fsyncs the folder holding `path`; never rejects. */
  async sync(path: string): Promise<void> {
    const slash = path.lastIndexOf("/");
    const dir = slash < 0 ? "." : slash === 0 ? "/" : path.slice(0, slash);
    try {
      const f = await this.#open(dir);
      try {
        await f.sync();
      } finally {
        f.close();
      }
    } catch (err) {
      if (this.failures++ > 0) return;
      const line = `folder fsync failed for ${dir}: ${errorMessage(err)}; renames there are ` +
        `durable only once the file system commits them (said once; later failures counted)`;
      if (this.#log === null) this.#unsaid = line;
      else this.#log.warn(line);
    }
  }
}

/** The process's folder fsyncs (syncFolderOf). */
export const folderSync = new FolderSync();

/** fsyncs the folder holding `path` (folderSync): best effort, a failure counted and said once. */
export function syncFolderOf(path: string): Promise<void> {
  return folderSync.sync(path);
}

/**
 * A one-line state file under the data directory (the Sparkplug bdSeq): `read` gives its text
 * (null when missing or unreadable as a regular file of at most SMALL_STATE_FILE_MAX_BYTES);
 * `write` replaces it whole (a temporary file renamed over it, synced, so a power cut leaves the
 * old text or the new, never a torn one), creating its directory.
 */
export function smallStateFile(path: string): {
  read(): Promise<string | null>;
  write(text: string): Promise<void>;
} {
  return {
    async read() {
      const r = await readRegularFile(path, SMALL_STATE_FILE_MAX_BYTES);
      return r.ok ? new TextDecoder().decode(r.bytes) : null;
    },
    async write(text: string) {
      const dir = path.slice(0, path.lastIndexOf("/"));
      if (dir !== "") await Deno.mkdir(dir, { recursive: true });
      const tmp = `${path}.tmp`;
      try {
        const f = await Deno.open(tmp, { write: true, create: true, truncate: true });
        try {
          const bytes = new TextEncoder().encode(text);
          for (let at = 0; at < bytes.length;) at += await f.write(bytes.subarray(at));
          await f.sync();
        } finally {
          f.close();
        }
        await Deno.rename(tmp, path);
      } catch (err) {
        // A full disk, a failing card: the old text stays, and no temporary file with it.
        await Deno.remove(tmp).catch(() => {});
        throw err;
      }
      await syncFolderOf(path);
    },
  };
}
