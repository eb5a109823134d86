export * from "./codec.ts";
export * from "./framing.ts";
