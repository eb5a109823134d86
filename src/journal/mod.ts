export * from "./journal_files.ts";
export * from "./journal_segments.ts";
export * from "./journal_seek.ts";
export * from "./journal_writer.ts";
export * from "./replace_whole.ts";
export * from "./watched_files.ts";
