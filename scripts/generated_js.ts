/**
 * What every generated runtime module shares (scripts/gen_*.ts): it is plain JavaScript, ASCII
 * only, with its types in a declaration file next to it.
 *
 * Why: Deno transpiles a `.ts` module and keeps the emitted JS with an inline base64 source map
 * that also holds the original source, and V8 keeps a second copy of the source-map URL: a heap
 * snapshot of the idle runtime showed the generated modules alone as ~3.9 MB of strings
 * (src/config/_structure_validator.ts as a 1,968 KB string for a 231 KB file). A `.js` module is
 * not transpiled: its heap string is its text. And V8 stores a source holding even one non-ASCII
 * character as a two-byte (UTF-16) string, twice the bytes, so the text is kept ASCII.
 */

/**
 * `text` with every non-ASCII UTF-16 code unit written as a `\uXXXX` escape (a character outside
 * the BMP becomes its surrogate pair). In generated code such characters occur only in string
 * literals, regular expression literals (from JSON.stringify or the schemas' descriptions) and
 * comments: there the escape keeps the value. One after an odd run of backslashes (an escape
 * such as `"\é"` or a line continuation) would change meaning: that is refused.
 */
export function asciiOnly(text: string): string {
  return text.replace(/(\\*)([\u0080-\uffff])/g, (_, slashes: string, c: string, at: number) => {
    if (slashes.length % 2 === 1) {
      const code = c.charCodeAt(0).toString(16).padStart(4, "0");
      throw new Error(
        `asciiOnly: U+${code} at offset ${at + slashes.length} follows a backslash; ` +
          `its escape would change the value`,
      );
    }
    return `${slashes}\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

/** The first line of a generated `.js` module: `deno check` types it from `typesFile`. */
export function selfTypesLine(typesFile: string): string {
  return `// @ts-self-types="./${typesFile}"`;
}

/** The declaration file of a `.js` module: `<name>.d.ts` for `<name>.js`. */
export function typesUrlOf(jsModule: URL): URL {
  if (!jsModule.pathname.endsWith(".js")) throw new Error(`not a .js module: ${jsModule.href}`);
  return new URL(jsModule.href.replace(/\.js$/, ".d.ts"));
}

/** The file name of a module URL (`_codec.js`). */
export function fileNameOf(url: URL): string {
  return url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
}
