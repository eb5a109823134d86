export * from "./codec.ts";
export * from "./framing.ts";
export * from "./client.ts";
export * from "./convert.ts";
