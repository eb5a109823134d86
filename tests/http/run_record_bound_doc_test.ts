/**
 * POST /v0/runs bounds its texts together, not one by one: experiment_label, params and
 * tag_scope must fit one run record of MAX_RECORD_BYTES (docs/http-api.md "Runs"), else 400
 * naming them. GET /v0/openapi.json says so where a client looks (the members' descriptions) and
 * declares no maxLength the server does not apply: a label the record holds is accepted.
 */
import assert from "node:assert/strict";
import { MAX_BODY_BYTES } from "../../src/http/mod.ts";
import { MAX_RECORD_BYTES } from "../../src/runs/mod.ts";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

const TOO_BIG = `run record exceeds ${MAX_RECORD_BYTES} bytes: shorten params, tag_scope or ` +
  "experiment_label";

Deno.test("POST /v0/runs: experiment_label and tag_scope ids past the run record's bound are 400 naming them; OpenAPI states that bound and no per-string maxLength", async () => {
  await withRunsFixture({ prefix: "http-run-record-bound-" }, async ({ fx }) => {
    // Within the body's bound, past the record's: refused naming the members.
    const over = "x".repeat(MAX_RECORD_BYTES - 100);
    for (
      const body of [
        { experiment_label: over },
        { tag_scope: { device_ids: [over] } },
      ]
    ) {
      assert.ok(JSON.stringify(body).length < MAX_BODY_BYTES);
      const r = await fx.request("POST", "/v0/runs", { body });
      assert.equal(r.status, 400, r.text.slice(0, 200));
      assert.equal(r.json.status.code, "INVALID_ARGUMENT");
      assert.equal(r.json.status.message, TOO_BIG);
    }
    // No bound of its own: a label the record holds is a run.
    const label = "x".repeat(MAX_RECORD_BYTES - 2000);
    const ok = await fx.request("POST", "/v0/runs", { body: { experiment_label: label } });
    assert.equal(ok.status, 200, ok.text.slice(0, 200));
    assert.equal(ok.json.run.experiment_label.length, label.length);

    const doc = (await fx.request("GET", "/v0/openapi.json")).json;
    const schema = doc.paths["/v0/runs"].post.requestBody.content["application/json"].schema;
    const scope = schema.properties.tag_scope.properties;
    for (
      const [where, member] of [
        ["experiment_label", schema.properties.experiment_label],
        ["tag_scope.device_ids", scope.device_ids.items],
        ["tag_scope.provider_ids", scope.provider_ids.items],
        ["tag_scope.signal_ids", scope.signal_ids.items],
      ]
    ) {
      assert.equal(member.maxLength, undefined, where);
    }
    for (
      const [where, member] of [["body", schema], [
        "experiment_label",
        schema.properties.experiment_label,
      ]]
    ) {
      assert.ok(
        String(member.description ?? "").includes(`${MAX_RECORD_BYTES} bytes`),
        `${where}: ${member.description}`,
      );
    }
  });
});
