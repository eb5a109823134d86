/**
 * GET /v0/audit `cursor`: the OpenAPI pattern is the parser's own shape (AUDIT_CURSOR_PATTERN), so
 * every text the pattern refuses the server refuses too (400), and every cursor the server takes
 * the pattern takes. The cursor is opaque: a text of the right shape that is no cursor of this
 * trail is 400 although the pattern takes it (the rows marked so below).
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

/** A cursor's text as GET /v0/audit writes it (unpadded base64url). */
function cursorOf(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

interface Row {
  readonly text: string;
  readonly pattern: boolean;
  readonly server: 200 | 400;
}

const ROWS: readonly Row[] = [
  // Cursors of the memory trail the fixture runs, shortest and longest.
  { text: cursorOf("m.0"), pattern: true, server: 200 },
  { text: cursorOf("m.12"), pattern: true, server: 200 },
  { text: cursorOf("m.999999999999999"), pattern: true, server: 200 },
  // Empty: no cursor (from the start).
  { text: "", pattern: true, server: 200 },
  // What atob also takes, which no answer's cursor holds: padding, spaces around and inside.
  { text: `${cursorOf("m.12")}==`, pattern: false, server: 400 },
  { text: ` ${cursorOf("m.12")}`, pattern: false, server: 400 },
  { text: `${cursorOf("m.12")} `, pattern: false, server: 400 },
  { text: `bS4x Mg`, pattern: false, server: 400 },
  { text: `bS4x\tMg`, pattern: false, server: 400 },
  // Outside the alphabet or the length bound (the longest cursor is 40 characters).
  { text: "bS4x.Mg", pattern: false, server: 400 },
  { text: "bS4", pattern: false, server: 400 },
  { text: "A".repeat(41), pattern: false, server: 400 },
  { text: "A".repeat(4096), pattern: false, server: 400 },
  { text: "\u00e9S4xMg", pattern: false, server: 400 },
  // The right shape, no cursor of this trail: opaque, refused by the server only.
  { text: "AAAA", pattern: true, server: 400 },
  { text: cursorOf("m.0000000000000001"), pattern: true, server: 400 },
  { text: cursorOf("f.999999999999.999999999999999"), pattern: true, server: 400 },
];

Deno.test("the OpenAPI pattern of audit cursor refuses every text the server refuses for its shape, and takes every cursor the server takes", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const doc = (await fx.request("GET", "/v0/openapi.json")).json;
    const param = doc.paths["/v0/audit"].get.parameters.find(
      (p: { name: string }) => p.name === "cursor",
    );
    assert.equal(typeof param?.schema?.pattern, "string", "cursor has a pattern");
    const pattern = new RegExp(param.schema.pattern, "u");
    const wrong: string[] = [];
    for (const row of ROWS) {
      const res = await fx.request("GET", `/v0/audit?cursor=${encodeURIComponent(row.text)}`);
      const said = pattern.test(row.text);
      if (said !== row.pattern || res.status !== row.server) {
        wrong.push(
          `${JSON.stringify(row.text.slice(0, 50))}: server ${res.status} (want ${row.server}), ` +
            `pattern ${said} (want ${row.pattern})`,
        );
      }
    }
    assert.deepEqual(wrong, []);
  } finally {
    await fx.close();
  }
});
