export * from "./journal_files.ts";
export * from "./run_record.ts";
export * from "./run_requests.ts";
export * from "./run_registry.ts";
export * from "./ulid.ts";
export { EVENT_INDEX_STRIDE } from "./_event_index.ts";
