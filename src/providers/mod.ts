export * from "./supervisor.ts";
export * from "./provider_session.ts";
export * from "./provider_host.ts";
export * from "./registry.ts";
export * from "./spawn_queue.ts";
export * from "./claims.ts";
export * from "./host_check.ts";
