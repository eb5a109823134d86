export * from "./telemetry_writer.ts";
export * from "./line_protocol.ts";
export * from "./rows.ts";
