/**
 * POSIX path helpers (the runtime runs on Linux). Pure string work, no Deno.*: behavior-tree
 * includes, config-relative paths and the CLI use them. Not node:path: loading it costs the
 * runtime ~2 MiB of RSS for these few functions (bench/README.md, "Footprint").
 */

/** Folder part of an absolute or relative path ("" for a bare name). */
export function dirnameOf(path: string): string {
  const i = path.lastIndexOf("/");
  if (i < 0) return "";
  if (i === 0) return "/";
  return path.slice(0, i);
}

/** File name without folder and without its last extension: `/a/demo.xml` -> `demo`. */
export function basenameWithoutExtension(path: string): string {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base;
}

/** Resolves `rel` against folder `dir` and normalises `.`/`..` segments. */
export function resolvePath(dir: string, rel: string): string {
  const joined = rel.startsWith("/") || dir === "" ? rel : `${dir}/${rel}`;
  const absolute = joined.startsWith("/");
  const out: string[] = [];
  for (const seg of joined.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
      continue;
    }
    out.push(seg);
  }
  return (absolute ? "/" : "") + out.join("/");
}

/** `path` relative to folder `dir` when it lies below it (`/a/b/c`, `/a` -> `b/c`), else null. */
export function pathBelow(dir: string, path: string): string | null {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  return path.startsWith(prefix) && path.length > prefix.length ? path.slice(prefix.length) : null;
}
