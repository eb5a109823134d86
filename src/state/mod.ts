export * from "./state_cache.ts";
export * from "./health.ts";
export * from "./staleness.ts";
export * from "./device_outage.ts";
export * from "./inventory.ts";
