/**
 * Rows the writer gives up on (refused by the database, not formattable) are said in the log even
 * when other errors came shortly before, and a refusal whose line the once-per-10-s limit held
 * back is said once that period is over, not only if another error comes. Against an injected
 * transport on one manual clock (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { scriptedRig } from "./_scripted_db.ts";

/** The write of 4 rows [0..3] refused; halves [0,1] ok, [2,3] refused; [2] ok, [3] refused. */
const REFUSE_ROW_3 = [400, "ok", 400, "ok", 400] as const;

Deno.test("TelemetryWriter logs the rows a refused write dropped, also right after a retried failure", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  try {
    // The database is back after one 503 (100 ms back-off), and refuses one row of the retry.
    db.script(503, ...REFUSE_ROW_3);
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.equal(writer.status().write_failures, 1);
    await clock.advanceAsync(200);
    assert.equal(writer.status().dropped_rejected, 1);
    assert.equal(writer.status().total_written, 3);
    const refused = lines.filter((l) => l.includes("write refused"));
    assert.equal(refused.length, 1, lines.join("\n"));
    assert.match(refused[0]!, /^ERROR\b.*1 of 4 rows dropped, 3 written.*value_double=3\b/);
    assert.equal(lines.filter((l) => l.includes("write failed, will retry")).length, 1);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter logs a refused write held back by the once-per-10-s limit when that period is over", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  try {
    db.script(...REFUSE_ROW_3, ...REFUSE_ROW_3);
    publish(0, 4);
    await clock.advanceAsync(1000);
    publish(4, 4); // the second write: row 7 refused, 1 s after the first refusal
    await clock.advanceAsync(10);
    assert.equal(writer.status().dropped_rejected, 2);
    const said = () => lines.filter((l) => l.includes("write refused"));
    assert.equal(said().length, 1, "the second refusal waits for the end of the period");
    await clock.advanceAsync(8_900); // 9.91 s after the first line: still within its period
    assert.equal(said().length, 1, lines.join("\n"));
    await clock.advanceAsync(200); // the period is over; nothing else went wrong meanwhile
    assert.equal(said().length, 2, lines.join("\n"));
    assert.match(said()[1]!, /^ERROR\b.*1 of 4 rows dropped.*value_double=7\b/);
    await clock.advanceAsync(20_000);
    assert.equal(said().length, 2, "said once");
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter says a failure held back by the once-per-10-s limit before the line that writes succeed again", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  try {
    db.script(503, 503, 503); // retried after 100 and 300 ms; the third retry is accepted
    publish(0, 4);
    for (let t = 0; t < 2000 && writer.status().total_written < 4; t += 10) {
      await clock.advanceAsync(10);
    }
    assert.equal(writer.status().total_written, 4);
    await clock.advanceAsync(20_000); // long past the limit's period
    const told = lines.filter((l) => /write failed|write succeeded/.test(l));
    assert.equal(told.length, 3, lines.join("\n"));
    assert.match(told[0]!, /^ERROR\b.*HTTP 503/);
    assert.match(told[1]!, /^ERROR\b.*HTTP 503.*\(1 similar errors suppressed before it\)$/);
    assert.match(told[2]!, /^INFO\b.*write succeeded again/);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter says writes succeed again only once a write is fully settled, not after an isolation cut by a failure", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  try {
    // 503; the retry is refused (400): half [0,1] accepted, half [2,3] fails (503) and is
    // retried; that retry is accepted.
    db.script(503, 400, "ok", 503, "ok");
    publish(0, 4);
    const depthWhenSaid: number[] = [];
    const push = lines.push.bind(lines);
    lines.push = (...l: string[]) => {
      if (l.some((x) => x.includes("write succeeded"))) {
        depthWhenSaid.push(writer.status().retry_buffer_depth);
      }
      return push(...l);
    };
    for (let t = 0; t < 2000 && writer.status().total_written < 4; t += 10) {
      await clock.advanceAsync(10);
    }
    assert.equal(db.requests.length, 5);
    assert.equal(writer.status().total_written, 4);
    assert.equal(writer.status().write_failures, 2);
    const told = lines.filter((l) => /write failed|write refused|write succeeded/.test(l));
    const again = told.filter((l) => l.includes("write succeeded"));
    assert.equal(again.length, 1, told.join("\n"));
    assert.match(again[0]!, /^INFO\b.*write succeeded again$/);
    // Said last, once nothing is left to retry: after every failure line (a held one too).
    assert.equal(told.at(-1), again[0], told.join("\n"));
    assert.deepEqual(depthWhenSaid, [0]);
  } finally {
    await writer.stop(0);
  }
});
