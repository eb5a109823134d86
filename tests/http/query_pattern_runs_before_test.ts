/**
 * GET /v0/runs `before`: the OpenAPI pattern accepts exactly the texts the server answers 200 for.
 * A run id is `<runtime name>-<ULID>` and the server takes any text ending with a ULID (a run of a
 * runtime since renamed, or one retention removed, still places the page by its ULID), so the
 * pattern is anchored at both ends with any text allowed before the ULID: a pattern anchored on the
 * bare ULID would refuse every real run id, which is what a client passes back.
 */
import assert from "node:assert/strict";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

const ULID = "01M859GKZ1Y42S4D3W5EFTKECQ";

Deno.test("the OpenAPI pattern of runs before accepts exactly the texts the server answers 200 (a real run id among them)", async () => {
  await withRunsFixture({ prefix: "http-before-pattern-", runtimeName: "demo" }, async ({ fx }) => {
    const id = (await fx.request("POST", "/v0/runs", { body: {} })).json.run.run_id;
    assert.match(id, /^demo-/);
    const texts = [
      id,
      `other-${id}`,
      ULID,
      `demo-${ULID}`,
      `x\n${ULID}`,
      `\u00e9${ULID}`,
      "",
      "x",
      ULID.slice(1),
      `demo-${ULID.slice(1)}`,
      ULID.toLowerCase(),
      `${ULID} `,
      `${ULID}x`,
      `${ULID}\n`,
      `${ULID.slice(0, 25)}I`,
      `${ULID.slice(0, 25)}U`,
    ];
    const doc = (await fx.request("GET", "/v0/openapi.json")).json;
    const param = doc.paths["/v0/runs"].get.parameters.find(
      (p: { name: string }) => p.name === "before",
    );
    const source: string = param.schema.pattern;
    assert.ok(source.startsWith("^") && source.endsWith("$"), `anchored: ${source}`);
    const pattern = new RegExp(source, "u");
    const disagree: string[] = [];
    for (const text of texts) {
      const res = await fx.request("GET", `/v0/runs?before=${encodeURIComponent(text)}`);
      assert.ok(res.status === 200 || res.status === 400, `${text}: ${res.status}`);
      if (pattern.test(text) !== (res.status === 200)) {
        const said = pattern.test(text) ? "accepts" : "refuses";
        disagree.push(`${JSON.stringify(text)}: server ${res.status}, pattern ${said}`);
      }
    }
    assert.deepEqual(disagree, []);
  });
});
