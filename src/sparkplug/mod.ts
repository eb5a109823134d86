/**
 * The Sparkplug B edge node (docs/sparkplug.md). Loaded on demand: the kernel imports this module
 * only when `sparkplug.enabled`, so a runtime without it loads neither it nor MQTT.js.
 */
export * from "./edge_node.ts";
export * from "./payloads.ts";
export * from "./fleet.ts";
