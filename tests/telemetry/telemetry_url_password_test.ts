/**
 * A telemetry.influxdb.url with a password in its user information (`http://user:PASSWORD@host`,
 * a proxy in front of the database that takes basic auth) is a secret: GET /v0/telemetry/status
 * (any role reads it) and the log show the URL with the password replaced, as the configuration's
 * diagnostics do.
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { urlWithoutPassword } from "../../src/common/mod.ts";
import { TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { ScriptedDb, SETTINGS } from "./_scripted_db.ts";

const PASSWORD = "s3cret-Pa55";

Deno.test("TelemetryWriter shows its target URL without the password of its user information, in the status and the log", async () => {
  const lines: string[] = [];
  const log: Logger = {
    debug: (m) => lines.push(`DEBUG ${m}`),
    info: (m) => lines.push(`INFO ${m}`),
    warn: (m) => lines.push(`WARN ${m}`),
    error: (m) => lines.push(`ERROR ${m}`),
    child: () => log,
  };
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock: new ManualClock(),
    logger: log,
    influx: { ...SETTINGS, url: `http://writer:${PASSWORD}@db.invalid:8086` },
    transport: new ScriptedDb(),
  });
  try {
    writer.start(new EventBus());
    assert.equal(writer.running, true);
    assert.equal(writer.status().backend?.url, "http://writer:<redacted>@db.invalid:8086");
    assert.ok(lines.some((l) => l.includes("db.invalid")), lines.join("\n"));
    assert.deepEqual(lines.filter((l) => l.includes(PASSWORD)), []);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("urlWithoutPassword replaces only a URL's password", () => {
  assert.equal(
    urlWithoutPassword("https://u:p%40ss@db:8086/x?a=1"),
    "https://u:<redacted>@db:8086/x?a=1",
  );
  assert.equal(urlWithoutPassword("http://token@db:8086"), "http://token@db:8086");
  assert.equal(urlWithoutPassword("http://db:8086/a@b"), "http://db:8086/a@b");
  assert.equal(urlWithoutPassword("http://127.0.0.1:8086"), "http://127.0.0.1:8086");
});

Deno.test("urlWithoutPassword replaces the whole password when it holds an '@' (the user information ends at the last '@')", () => {
  // new URL() takes this URL (password "s3c%40ret-Pa55"): GET /v0/telemetry/status showed
  // `http://writer:<redacted>@ret-Pa55@db:8086`, most of the password, to any role.
  const url = "http://writer:s3c@ret-Pa55@db.invalid:8086/x?a=1";
  assert.equal(new URL(url).password, "s3c%40ret-Pa55");
  assert.equal(urlWithoutPassword(url), "http://writer:<redacted>@db.invalid:8086/x?a=1");
  // A user name with an '@' too: the password is what follows its first ':'.
  assert.equal(
    urlWithoutPassword("http://ops@site:pw-12345@db:8086"),
    "http://ops@site:<redacted>@db:8086",
  );
  // Still nothing replaced where there is no password, or the '@' is past the authority.
  assert.equal(urlWithoutPassword("http://token@db:8086"), "http://token@db:8086");
  assert.equal(urlWithoutPassword("http://db:8086/a@b"), "http://db:8086/a@b");
  assert.equal(urlWithoutPassword("http://db:8086?q=a:b@c"), "http://db:8086?q=a:b@c");
});
