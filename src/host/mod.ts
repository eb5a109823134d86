export * from "./clock.ts";
export * from "./logger.ts";
export * from "./spawn.ts";
