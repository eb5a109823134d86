export * from "./run_record.ts";
export * from "./run_requests.ts";
export * from "./run_registry.ts";
export * from "./ulid.ts";
