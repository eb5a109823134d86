/**
 * limit/offset of a paged list (GET /v0/runs, its events, GET /v0/incidents): an absent,
 * non-finite or below-1 limit takes `limits.default`, a larger one is cut to `limits.max`; an
 * absent, non-finite or negative offset is 0.
 */
export function pageBounds(
  page: { readonly limit?: number; readonly offset?: number },
  limits: { readonly default: number; readonly max: number },
): { limit: number; offset: number } {
  const l = page.limit;
  const o = page.offset;
  return {
    limit: l === undefined || !Number.isFinite(l) || l < 1
      ? limits.default
      : Math.min(Math.floor(l), limits.max),
    offset: o === undefined || !Number.isFinite(o) || o < 0 ? 0 : Math.floor(o),
  };
}
