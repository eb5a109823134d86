/**
 * Compares a query parameter's OpenAPI pattern with the server's real answers: each text is sent
 * alone (with fixed companions) and the pattern must accept exactly those the server does not
 * answer 400 for.
 */
import assert from "node:assert/strict";
import type { HttpFixture } from "../helpers/runtime_fixture.ts";

/** Texts on both sides of the integer rules: words, signs, spaces, fractions and every edge. */
export const INTEGER_TEXTS: readonly string[] = [
  "x",
  "",
  " ",
  "12abc",
  "0x10",
  "-3",
  "+7",
  " 10 ",
  "1.5",
  "1e3",
  "0",
  "00",
  "1",
  "01",
  "999",
  "1000",
  "1001",
  "0001000",
  "00001000",
  "9999999",
  "10000000",
  "9999999999",
  "09999999999",
  "10000000000",
  "0000000000000000",
  "00000000000000000",
  "0000000000000001",
  "1795474376396",
  "8999999999999999",
  "9007199254740990",
  "9007199254740991",
  "9007199254740992",
  "9007199254740999",
  "9007299254740991",
  "9999999999999999",
  "10000000000000000",
];

/** The parameter `field` of `docPath`'s GET in the served OpenAPI document. */
async function patternOf(fx: HttpFixture, docPath: string, field: string): Promise<RegExp> {
  const doc = (await fx.request("GET", "/v0/openapi.json")).json;
  const param = doc.paths[docPath].get.parameters.find(
    (p: { name: string }) => p.name === field,
  );
  assert.ok(param, `${docPath} documents ${field}`);
  assert.equal(typeof param.schema.pattern, "string", `${docPath} ${field} has a pattern`);
  return new RegExp(param.schema.pattern, "u");
}

/**
 * Asserts that `field`'s pattern accepts a text exactly when `path?field=text` (plus `also`, the
 * companions that keep a range valid) is not 400; any other status than 200/400 fails too.
 */
export async function assertPatternAgrees(
  fx: HttpFixture,
  o: { docPath: string; path: string; field: string; texts: readonly string[]; also?: string },
): Promise<void> {
  const pattern = await patternOf(fx, o.docPath, o.field);
  const disagree: string[] = [];
  for (const text of o.texts) {
    const query = `${o.field}=${encodeURIComponent(text)}${o.also ? `&${o.also}` : ""}`;
    const res = await fx.request("GET", `${o.path}?${query}`);
    assert.ok(res.status === 200 || res.status === 400, `${query}: ${res.status} ${res.text}`);
    if (pattern.test(text) !== (res.status === 200)) {
      const said = pattern.test(text) ? "accepts" : "refuses";
      disagree.push(`${JSON.stringify(text)}: server ${res.status}, pattern ${said}`);
    }
  }
  assert.deepEqual(disagree, [], `${o.docPath} ${o.field}`);
}
