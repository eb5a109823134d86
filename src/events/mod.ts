export * from "./catalogue.ts";
export * from "./event_bus.ts";
