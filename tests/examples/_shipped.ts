/** The configurations the project ships: examples/*.yaml and the one the systemd README installs. */
import assert from "node:assert/strict";

const EXAMPLES = new URL("../../examples", import.meta.url).pathname;

/** Absolute paths of every examples/*.yaml, sorted. */
export function exampleConfigFiles(): string[] {
  return [...Deno.readDirSync(EXAMPLES)]
    .filter((e) => e.isFile && e.name.endsWith(".yaml"))
    .map((e) => `${EXAMPLES}/${e.name}`)
    .sort();
}

/** The configuration step 4 of examples/systemd/README.md writes to /etc/runtime/config.yaml. */
export async function systemdReadmeConfig(): Promise<string> {
  const readme = await Deno.readTextFile(`${EXAMPLES}/systemd/README.md`);
  const m = /sudo tee \/etc\/runtime\/config\.yaml >\/dev\/null <<'EOF'\n([\s\S]*?)\nEOF\n/.exec(
    readme,
  );
  assert.ok(m, "examples/systemd/README.md: the config.yaml heredoc of step 4");
  return m[1]!;
}
