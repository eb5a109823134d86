export * from "./clock.ts";
export * from "./logger.ts";
export * from "./spawn.ts";
export * from "./journal_file.ts";
export * from "./serve.ts";
export * from "./notify.ts";
export * from "./files.ts";
export * from "./process_stats.ts";
