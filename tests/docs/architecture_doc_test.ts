/**
 * docs/architecture.md names files and folders of the code; a rename must not leave it pointing
 * at nothing. Every `name.ts` it cites is a file of the repository (under src/ unless the path
 * says otherwise), and every folder of src/ has a place in its picture.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const doc = await Deno.readTextFile(new URL("docs/architecture.md", ROOT));

function filesUnder(dir: URL, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (e.isDirectory) out.push(...filesUnder(new URL(`${e.name}/`, dir), `${prefix}${e.name}/`));
    else out.push(`${prefix}${e.name}`);
  }
  return out;
}

Deno.test("docs/architecture.md cites only files that exist", () => {
  const src = filesUnder(new URL("src/", ROOT));
  const cited = new Set([...doc.matchAll(/`([\w/.]+\.ts)`/g)].map((m) => m[1]!));
  assert.ok(cited.size > 20, `only ${cited.size} files cited: did the pattern break?`);
  const missing = [...cited].filter((name) => {
    // a naming convention, not a file
    if (name === "_private.ts") return false;
    if (/^(scripts|tests|bench|examples)\//.test(name)) {
      try {
        return !Deno.statSync(new URL(name, ROOT)).isFile;
      } catch {
        return true;
      }
    }
    return !src.some((f) => f === name || f.endsWith(`/${name}`));
  });
  assert.deepEqual(missing, [], "cited in docs/architecture.md but not in the repository");
});

Deno.test("docs/architecture.md places every folder of src/", () => {
  const folders = [...Deno.readDirSync(new URL("src/", ROOT))].filter((e) => e.isDirectory)
    .map((e) => e.name);
  const absent = folders.filter((f) => !doc.includes(`\`${f}\``) && !doc.includes(`\`${f}/`));
  assert.deepEqual(absent, [], "folders of src/ that docs/architecture.md does not mention");
});
