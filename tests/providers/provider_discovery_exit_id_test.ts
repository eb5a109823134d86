/**
 * A provider that dies while describing a device fails the start with a message that quotes the
 * device id it was asked about, cut to PROVIDER_TEXT_CHARS: the id is the provider's own text, so
 * where it ends must be plain (an id holding "; " or a line break read as more of the message, or
 * as another failure of `provider start failed: a; b`), and a long id must not make a message of
 * any length. The programmable provider as a real child process.
 */
import assert from "node:assert/strict";
import { PROVIDER_TEXT_CHARS, RuntimeError } from "../../src/common/mod.ts";
import { startProgrammable, T } from "../helpers/programmable_provider.ts";

const SIGNALS = [{ id: "x", type: T.DOUBLE }];

Deno.test("ProviderSession start failure when the provider dies on DescribeDevice quotes the device id, cut to PROVIDER_TEXT_CHARS", async () => {
  // A quote, what reads as another failure, and more than PROVIDER_TEXT_CHARS in all (an id with
  // a line break is refused at discovery before it is described: hasControlCharacter).
  const evil = `b"; p1: forged failure ${"x".repeat(PROVIDER_TEXT_CHARS)}`;
  const shown = JSON.stringify(`${evil.slice(0, PROVIDER_TEXT_CHARS)}\u2026`);
  await assert.rejects(
    startProgrammable({
      list: ["a", evil],
      devices: { a: { signals: SIGNALS }, [evil]: { signals: SIGNALS } },
      exitOnDescribe: evil,
    }),
    (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.ok(!e.message.includes("\n"), e.message);
      assert.ok(
        e.message.startsWith(`provider start failed: p0: DescribeDevice ${shown} failed: `),
        e.message,
      );
      assert.match(e.message, /\(process exit code 4\)$/);
      return true;
    },
  );
});
