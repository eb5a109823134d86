export * from "./audit_files.ts";
export * from "./audit_trail.ts";
