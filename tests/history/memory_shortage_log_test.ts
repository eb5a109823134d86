/**
 * A shortage of history.memory_max_bytes is logged per episode, whichever providers it touches
 * (their rings share the one budget): one WARN when it begins, naming the ring or signal that began
 * it, one INFO when it is over -- every ring has room again / every signal's latest value is kept
 * again, and none new for HISTORY_SHORTAGE_QUIET_MS -- then the next shortage is a new episode with
 * its WARN (docs/history.md). Before, the roomless WARN was one per provider (again after every
 * ring got room, with no line between), the too-large WARN once per provider for good. A real
 * History fed by hand, its log captured.
 */
import assert from "node:assert/strict";
import { HISTORY_SHORTAGE_QUIET_MS } from "../../src/history/mod.ts";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

const T0 = 1_700_000_000_000;

/** The history's WARN and INFO lines about the budget (a shortage's). */
const shortageLines = (lines: string[]) =>
  lines.filter((l) => /^(WARN|INFO) .*history: .*memory_max_bytes/.test(l));

Deno.test("rings made without room: one WARN per episode for every provider, one INFO when every ring has room again", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  // One device ring (128 bytes) and one signal ring (208): exactly one device of one signal fits.
  const h = handFedHistory({ memoryMaxBytes: 336, diskMaxBytes: 0 }, new MemoryFiles(), log);
  h.clock.wall = T0;
  await h.history.start();
  try {
    h.poll("p0", "d0", 1);
    assert.deepEqual(shortageLines(lines), []);
    h.poll("p1", "d1", 1); // no room: its device's and its signal's rings keep nothing
    h.poll("p2", "d2", 1); // another provider, the same shortage
    const warns = shortageLines(lines);
    assert.equal(warns.length, 1, warns.join("\n"));
    assert.match(warns[0]!, /^WARN .*no room for the ring of the polls of device "p1\/d1"/);
    assert.equal(h.history.status().memoryRoomlessRings, 4);

    // p0 and p2 go: once p0's polls are older than memory_seconds, p1's rings get room.
    h.known.delete("p0/d0");
    h.known.delete("p2/d2");
    h.clock.advance(HISTORY_SHORTAGE_QUIET_MS);
    h.poll("p1", "d1", 2); // the sweep lets p0 and p2 go
    h.clock.advance(1000);
    h.poll("p1", "d1", 3); // p1's rings get room
    assert.equal(h.history.status().memoryRoomlessRings, 0);
    assert.equal(shortageLines(lines).length, 1, "said at the next sweep");
    h.clock.advance(10_000);
    h.poll("p1", "d1", 4);
    const ended = shortageLines(lines);
    assert.equal(ended.length, 2, ended.join("\n"));
    assert.match(ended[1]!, /^INFO .*every ring has room .* again \(4 ring\(s\) were made without/);

    // A new shortage is a new episode.
    h.poll("p3", "d3", 1);
    const again = shortageLines(lines);
    assert.equal(again.length, 3, again.join("\n"));
    assert.match(again[2]!, /^WARN .*no room for the ring of the polls of device "p3\/d3"/);
  } finally {
    await h.history.stop();
  }
});

Deno.test("values too large to keep: one WARN per episode for every provider, one INFO once every signal's latest value is kept again and none came for the quiet time", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const h = handFedHistory({ memoryMaxBytes: 4096, diskMaxBytes: 0 }, new MemoryFiles(), log);
  h.clock.wall = T0;
  /** A poll of p/d whose one signal `label` is the string `text`. */
  const label = (p: string, d: string, text: string) => {
    const signals = new Map<string, SignalState>([["label", {
      value: { type: "string", string: text },
      quality: "OK",
      timestampMs: h.clock.wall,
      receivedMono: h.clock.mono,
    }]]);
    const dev: DeviceState = {
      providerId: p,
      deviceId: d,
      pollable: ["label"],
      signals,
      lastPollMs: h.clock.wall,
      lastPollMono: h.clock.mono,
      available: true,
    };
    h.feed(dev);
  };
  const big = (c: string) => c.repeat(3000); // 6,032 bytes: past the whole budget
  await h.history.start();
  try {
    label("p0", "d0", big("x"));
    label("p1", "d1", big("x")); // another provider, the same shortage
    let said = shortageLines(lines);
    assert.equal(said.length, 1, said.join("\n"));
    assert.match(said[0]!, /^WARN .*value of signal "p0\/d0\/label" \(6032 bytes\) is too large/);

    // Both kept again, but a value too large comes back within the quiet time: the same episode.
    h.clock.advance(1000);
    label("p0", "d0", "small");
    label("p1", "d1", "small");
    h.clock.advance(20_000);
    label("p0", "d0", big("y"));
    h.clock.advance(1000);
    label("p0", "d0", "small");
    assert.equal(shortageLines(lines).length, 1, "no INFO, no WARN again");

    // Quiet for HISTORY_SHORTAGE_QUIET_MS with every latest value kept: the episode ends.
    h.clock.advance(HISTORY_SHORTAGE_QUIET_MS);
    label("p0", "d0", "small");
    said = shortageLines(lines);
    assert.equal(said.length, 2, said.join("\n"));
    assert.match(said[1]!, /^INFO .*latest value fits .* again \(3 value\(s\) too large were not/);

    // The next one is a new episode, whichever provider it comes from.
    label("p1", "d1", big("z"));
    said = shortageLines(lines);
    assert.equal(said.length, 3, said.join("\n"));
    assert.match(said[2]!, /^WARN .*value of signal "p1\/d1\/label" .* is too large/);
  } finally {
    await h.history.stop();
  }
});

Deno.test("a value too large that stays the signal's latest keeps its episode open however long", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const h = handFedHistory({ memoryMaxBytes: 4096, diskMaxBytes: 0 }, new MemoryFiles(), log);
  h.clock.wall = T0;
  await h.history.start();
  try {
    const signals = new Map<string, SignalState>();
    const dev: DeviceState = {
      providerId: "p0",
      deviceId: "d0",
      pollable: ["label"],
      signals,
      lastPollMs: 0,
      lastPollMono: 0,
      available: true,
    };
    const value = { type: "string" as const, string: "x".repeat(3000) };
    for (let i = 0; i < 3; i++) {
      signals.set("label", {
        value,
        quality: "OK",
        timestampMs: h.clock.wall,
        receivedMono: h.clock.mono,
      });
      h.feed(dev);
      h.clock.advance(HISTORY_SHORTAGE_QUIET_MS);
    }
    const said = shortageLines(lines);
    assert.equal(said.length, 1, `the ring still lacks the value: no INFO\n${said.join("\n")}`);
  } finally {
    await h.history.stop();
  }
});
