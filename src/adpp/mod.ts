export * from "./codec.ts";
export * from "./framing.ts";
export * from "./client.ts";
export * from "./convert.ts";
// The protobuf wire primitives, for codecs generated from other schemas (src/sparkplug/_codec.js).
export { ProtoReader } from "./_proto_reader.ts";
export { badType, int32Of, ProtoWriter } from "./_proto_writer.ts";
export * from "./read_signals.ts";
export * from "./other_device_answer.ts";
