export * from "./state_cache.ts";
export * from "./health.ts";
