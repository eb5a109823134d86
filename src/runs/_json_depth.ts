/** Nesting depth of parsed JSON values (iterative, so any depth is safe to measure). */

/**
 * Whether `value` nests arrays/objects deeper than `max` levels (`[]` and `{}` are one level, a
 * scalar none). Stops as soon as the bound is passed.
 */
export function exceedsJsonDepth(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > max) return true;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) {
      if (typeof c === "object" && c !== null) stack.push([c, depth + 1]);
    }
  }
  return false;
}
