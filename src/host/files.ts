import { constants, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

/** Reads a whole file as bytes (behavior trees: the digest covers the exact file bytes). */
export function readFileBytes(path: string): Uint8Array {
  return Deno.readFileSync(path);
}

/** What `readRegularFile` gives: the bytes, or why the file was refused (a message for people). */
export type RegularFileRead =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly message: string };

/** Chunk in which `readRegularFile` grows its buffer when the file is larger than stat said. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Reads a regular file of at most `maxBytes` bytes. The file is opened first (non-blocking, so a
 * FIFO without a writer cannot hang the open) and the open file is checked, so a path swapped for
 * a FIFO or a device after a check cannot slip through; then at most `maxBytes + 1` bytes are read,
 * so a file that grows meanwhile (or a /proc file whose stat size is 0) is still bounded.
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<RegularFileRead> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    return { ok: false, message: openErrorMessage(e) };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { ok: false, message: `not a regular file (${fileKind(info)})` };
    if (info.size > maxBytes) {
      return {
        ok: false,
        message: `too large: ${info.size} bytes, the limit is ${limit(maxBytes)}`,
      };
    }
    let buffer = new Uint8Array(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    while (length <= maxBytes) {
      if (length === buffer.length) {
        const grown = new Uint8Array(Math.min(buffer.length + READ_CHUNK_BYTES, maxBytes + 1));
        grown.set(buffer);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) return { ok: true, bytes: buffer.subarray(0, length) };
      length += bytesRead;
    }
    return {
      ok: false,
      message: `too large: it grew past the limit of ${limit(maxBytes)} while being read`,
    };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  } finally {
    await handle.close();
  }
}

function limit(maxBytes: number): string {
  const mib = maxBytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${maxBytes} bytes (${mib} MiB)` : `${maxBytes} bytes`;
}

function fileKind(info: Stats): string {
  if (info.isDirectory()) return "a directory";
  if (info.isFIFO()) return "a FIFO";
  if (info.isCharacterDevice()) return "a character device";
  if (info.isBlockDevice()) return "a block device";
  if (info.isSocket()) return "a socket";
  return "not a file";
}

function openErrorMessage(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "ENXIO") return "not a regular file (a FIFO or socket that cannot be opened)";
  return e instanceof Error ? e.message : String(e);
}
