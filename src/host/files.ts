/** Reads a whole file as bytes (behavior trees: the digest covers the exact file bytes). */
export function readFileBytes(path: string): Uint8Array {
  return Deno.readFileSync(path);
}
