export * from "./buckets.ts";
export * from "./disk_tier.ts";
export * from "./history.ts";
export * from "./incidents.ts";
export { exactDouble, QUALITY_BY_CODE } from "./ring.ts";
