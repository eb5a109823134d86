export * from "./safe_state.ts";
export * from "./estop.ts";
export * from "./verify.ts";
