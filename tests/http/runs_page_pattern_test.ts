/**
 * GET /v0/runs and GET /v0/runs/{id}/events: the OpenAPI pattern of `limit` and `offset` accepts
 * exactly the texts the server accepts (docs/http-api.md "Runs": a text that does not read as a
 * number takes the default, one written as a number must be an integer within +-(2^53-1)), so a
 * client generated from the document is neither stricter nor looser than the server.
 */
import assert from "node:assert/strict";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

/** Texts on both sides of the server's rule: words, numbers, their edges and 2^53's. */
const TEXTS = [
  "x",
  "",
  " ",
  "abc",
  "12abc",
  "0x10",
  "1,5",
  "--1",
  "Infinity",
  "NaN",
  "5",
  "-3",
  "+7",
  " 10 ",
  "\t10\n",
  "0",
  "-0",
  "9007199254740991",
  "-9007199254740991",
  "00000000000000000009007199254740991",
  "9007199254740992",
  "9007199254740990",
  "9007199254740989",
  "9007199254740999",
  "9007299254740991",
  "9006999999999999",
  "8999999999999999",
  "999999999999999",
  "-9007199254740992",
  "9999999999999999",
  "10000000000000000",
  "99999999999999999999",
  "1e20",
  "1E2",
  "1.5",
  "5.",
  ".5",
  "1.0",
  "-1e-2",
  " 2.5 ",
];

Deno.test("the OpenAPI pattern of runs and run-events limit/offset accepts exactly the texts the server answers 200", async () => {
  await withRunsFixture({ prefix: "http-page-pattern-" }, async ({ fx }) => {
    const id = (await fx.request("POST", "/v0/runs", { body: {} })).json.run.run_id;
    const doc = (await fx.request("GET", "/v0/openapi.json")).json;
    for (
      const [docPath, path] of [
        ["/v0/runs", "/v0/runs"],
        ["/v0/runs/{run_id}/events", `/v0/runs/${id}/events`],
      ] as const
    ) {
      for (const field of ["limit", "offset"]) {
        const param = doc.paths[docPath].get.parameters.find(
          (p: { name: string }) => p.name === field,
        );
        const pattern = new RegExp(param.schema.pattern, "u");
        const disagree: string[] = [];
        for (const text of TEXTS) {
          const res = await fx.request("GET", `${path}?${field}=${encodeURIComponent(text)}`);
          assert.ok(res.status === 200 || res.status === 400, `${field}=${text}: ${res.status}`);
          if (pattern.test(text) !== (res.status === 200)) {
            const said = pattern.test(text) ? "accepts" : "refuses";
            disagree.push(`${JSON.stringify(text)}: server ${res.status}, pattern ${said}`);
          }
        }
        assert.deepEqual(disagree, [], `${docPath} ${field}`);
      }
    }
  });
});
