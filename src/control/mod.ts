export * from "./validate_args.ts";
export * from "./call_router.ts";
export * from "./call_policy.ts";
export * from "./declared_calls.ts";
export * from "./mode_manager.ts";
export * from "./parameters.ts";
export * from "./audit_sink.ts";
export * from "./stop_actions.ts";
