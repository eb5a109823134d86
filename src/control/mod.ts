export * from "./validate_args.ts";
export * from "./call_router.ts";
