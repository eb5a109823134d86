/**
 * Test helper: the process logger as the service creates it, writing four events to stderr
 * (one per level, one of them multi-line). Run by logger_format_test.ts with and without
 * JOURNAL_STREAM.
 */
import { createStderrLogger } from "../../src/host/mod.ts";

const log = createStderrLogger("debug");
log.debug("event one");
log.child("http").info("event two");
log.child("provider").child("sim0").warn("event three\nsecond line\r\nthird line");
log.error("event four");
