export * from "./errors.ts";
export * from "./typed_value.ts";
export * from "./json_text.ts";
export * from "./capabilities.ts";
export * from "./host.ts";
export * from "./version.ts";
export * from "./health.ts";
export * from "./utf8.ts";
export { basenameWithoutExtension, dirnameOf, pathBelow, resolvePath } from "./paths.ts";
