/**
 * The export formats chosen by `Accept` honour its quality values (RFC 9110 sec. 12.5.1):
 * `text/csv;q=0` says CSV is not acceptable, and a client that ranks JSON above CSV (or JSON Lines
 * above CSV) gets what it ranks first. GET /v0/history (JSON or CSV) against the simulated
 * provider; GET /v0/incidents/{id}'s choice among JSON, CSV and JSON Lines by wantedFormat, which
 * both routes use. `format=` still decides over any Accept.
 */
import assert from "node:assert/strict";
import { wantedFormat } from "../../src/http/api/history_routes.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const HISTORY = "/v0/history/sim0/tempctl0?signal_id=tc1_temp";

Deno.test("GET /v0/history answers JSON to an Accept that refuses CSV (q=0) or ranks JSON first", async () => {
  const fx = await startHttpFixture({ providers: 1 });
  try {
    const typeFor = async (accept: string) =>
      (await fx.request("GET", HISTORY, { headers: { accept } })).headers.get("content-type");
    for (
      const accept of [
        "application/json, text/csv;q=0",
        "text/csv;q=0",
        "text/csv; q=0.0",
        "application/json, text/csv;q=0.5",
        "text/csv;q=0.2, application/*;q=0.9",
      ]
    ) {
      assert.equal(await typeFor(accept), "application/json", accept);
    }
    // CSV when asked for, as before.
    for (const accept of ["text/csv", "text/csv;q=0.9, application/json;q=0.5", "TEXT/CSV"]) {
      assert.equal(await typeFor(accept), "text/csv; charset=utf-8", accept);
    }
    // `format` decides over Accept.
    const forced = await fx.request("GET", `${HISTORY}&format=csv`, {
      headers: { accept: "application/json, text/csv;q=0" },
    });
    assert.equal(forced.headers.get("content-type"), "text/csv; charset=utf-8");
  } finally {
    await fx.close();
  }
});

Deno.test("wantedFormat: an incident export follows the Accept ranking among JSON, CSV and JSON Lines", () => {
  const all = ["json", "csv", "jsonl"] as const;
  const cases: [string | null, string][] = [
    [null, "json"],
    ["*/*", "json"],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "json"],
    ["application/jsonl", "jsonl"],
    ["application/x-ndjson", "jsonl"],
    ["text/csv", "csv"],
    ["text/csv;q=0.2, application/jsonl", "jsonl"],
    ["application/jsonl;q=0, text/csv;q=0", "json"],
    ["application/jsonl;q=0.5, application/json", "json"],
    ["application/json;q=0.1, application/jsonl;q=0.5", "jsonl"],
  ];
  for (const [accept, want] of cases) {
    assert.equal(wantedFormat(null, accept, all), want, String(accept));
  }
  assert.equal(wantedFormat("jsonl", "text/csv", all), "jsonl", "format decides");
});
