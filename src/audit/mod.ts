export * from "./audit_entry.ts";
export * from "./audit_trail.ts";
