export * from "./buckets.ts";
export * from "./disk_tier.ts";
export * from "./history.ts";
export * from "./incidents.ts";
export { ChangeWalk, exactDouble, QUALITY_BY_CODE, type RingSample, ringValue } from "./ring.ts";
