/**
 * telemetry.influxdb.url that is not an http(s) URL: the configuration check and the telemetry
 * writer refuse it with the same words (httpUrlProblem in src/common/), the config error adding
 * its key and line:column, the writer's naming the setting. The url is shown JSON-quoted, its
 * password hidden, cut to URL_TEXT_CHARS: a url of 10 kB makes a bounded message.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { URL_TEXT_CHARS } from "../../src/common/mod.ts";
import { influxTransport, loadInfluxClient } from "../../src/telemetry/mod.ts";
import { load, PROV } from "./_helpers.ts";

await loadInfluxClient();

/** The one error a config with telemetry enabled at `url` gets, and where. */
function configError(url: string): { message: string; line: number; path: string } {
  const yaml = `${PROV}\ntelemetry:\n  enabled: true\n  influxdb:\n    token: t\n    url: ${
    JSON.stringify(url)
  }\n`;
  const errors = load(yaml).diagnostics.filter((d) => d.severity === "error");
  assert.equal(errors.length, 1, errors.map((d) => d.message).join("\n"));
  return { message: errors[0]!.message, line: errors[0]!.line, path: errors[0]!.path };
}

function writerError(url: string): string {
  try {
    influxTransport(url, "t");
  } catch (err) {
    assert.equal((err as RuntimeError).code, "INVALID_ARGUMENT");
    return (err as Error).message;
  }
  assert.fail(`influxTransport took ${url}`);
}

Deno.test("the config check and the telemetry writer refuse a url that is not http(s) with the same words", () => {
  for (const url of ["ftp://writer:s3cret-pw@db:21", "not a url", "ws://db:8086", "data:,x"]) {
    const config = configError(url);
    assert.equal(config.path, "telemetry.influxdb.url");
    assert.equal(config.line, 6, url);
    assert.equal(writerError(url), `telemetry.influxdb.url: ${config.message}`, url);
    assert.ok(!config.message.includes("s3cret-pw"), config.message);
  }
  assert.equal(
    configError("ftp://writer:s3cret-pw@db:21").message,
    '"ftp://writer:<redacted>@db:21" is not an http(s) URL (fetch cannot write to ftp:)',
  );
});

Deno.test("a 10 kB url makes a bounded config error and writer error, its password hidden", () => {
  const password = `pw-${"p".repeat(10_000)}`;
  const long = [
    `ftp://db.invalid/${"x".repeat(10_000)}`,
    `ftp://writer:${password}@db.invalid/x`,
    `${"a".repeat(10_000)}://db.invalid/x`,
    `not a url ${"y".repeat(10_000)}`,
  ];
  for (const url of long) {
    const config = configError(url).message;
    const writer = writerError(url);
    // The quoted url (cut, with its ellipsis and quotes), the scheme cut as well, and the words.
    const bound = 2 * (URL_TEXT_CHARS + 3) + 80;
    assert.ok(config.length <= bound, `${config.length}: ${config.slice(0, 300)}`);
    assert.equal(writer, `telemetry.influxdb.url: ${config}`);
    assert.ok(!config.includes("pw-ppp"), config.slice(0, 300));
    // Cut, but for the password's url: hidden first, what is left is short.
    assert.equal(config.includes("\u2026"), !url.includes(password), config.slice(0, 300));
  }
});
