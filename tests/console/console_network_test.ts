/**
 * The operator console opened from another machine (docs/console.md): the runtime bound to 0.0.0.0
 * and the page opened by this host's LAN address, as an operator's tablet would. With auth and TLS:
 * the page asks for the token, keeps it in sessionStorage (per tab), sends it as a bearer header
 * and never in a URL, and its POSTs pass the request policy. Without auth (allow_insecure_bind):
 * opened by IP address or by a name in http.allowed_hosts the page can change state; by any other
 * name the runtime refuses and the page shows why and what to configure. Forms cover every argument
 * type with the small scripted provider tests/console/_form_provider.ts.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  type ChromiumSession,
  collectPageErrors,
  openChromium,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { type RuntimeChild, startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { selfSignedCert } from "../http/_tls_certs.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { waitFor } from "../helpers/kernel.ts";

const TOKEN = "console-test-token-7f3a";
const TOKEN_KEY = "runtime-console.api-token";
const CONFIGURE = 'form[data-fn="form0/panel0/1"]';
const PING = 'form[data-fn="form0/panel0/2"]';
const REFUSE = 'form[data-fn="form0/panel0/3"]';

/** This host's first non-loopback IPv4 address (a LAN address), else 127.0.0.1 (warned). */
function lanAddress(): string {
  const found = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.")
  );
  if (found) return found.address;
  console.warn("console_network_test: no non-loopback IPv4 address; using 127.0.0.1");
  return "127.0.0.1";
}

/** Each runtime its own data_dir (one runtime per folder: a second is refused at start). */
function config(port: number, http: string, dataDir: string): string {
  return `runtime:
  name: panel-test
  data_dir: ${dataDir}
http:
  bind: 0.0.0.0
  port: ${port}
${http}
providers:
  - id: form0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-env, ${JSON.stringify(`${REPO}tests/console/_form_provider.ts`)}]
polling:
  interval_ms: 200
`;
}

const signal = (id: string) => `tr[data-signal="form0/panel0/${id}"] td.value`;

/** Runs a function form; resolves with its result text once it settles. */
async function run(page: Page, form: string, name: string): Promise<string> {
  await page.locator(`${form} .result`).evaluate((el: PageGlobal) => el.textContent = "");
  await page.locator(form).getByRole("button", { name: `Run ${name}` }).click();
  return await waitForText(page, `${form} .result`, /^(?!Calling)./);
}

Deno.test({
  name: "Operator console over the network: token prompt over TLS, every argument type, origins",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const lan = lanAddress();
    const dir = await Deno.makeTempDir({ prefix: "console-network-" });
    let browser: ChromiumSession | null = null;
    const runtimes: RuntimeChild[] = [];
    try {
      const { cert } = await selfSignedCert(dir);
      const pem = await Deno.readTextFile(cert);
      // Chromium and both runtimes start at once (the second serves the last two steps).
      const [launched, tls, opened] = await Promise.allSettled([
        openChromium([`--host-resolver-rules=MAP console.test ${lan}, MAP other.test ${lan}`]),
        // Each on a port of its own: one that lost its port to the other starts again elsewhere.
        startRuntimeWithConfigOnFreePort(
          `${dir}/tls.yaml`,
          (port) =>
            config(
              port,
              "  auth_enabled: true\n  auth_exempt_loopback: false\n" +
                "  tls_cert_path: cert.pem\n  tls_key_path: key.pem",
              "data-tls",
            ),
          { cwd: dir, env: { RUNTIME_API_TOKEN: TOKEN }, token: TOKEN, caCert: pem },
        ),
        startRuntimeWithConfigOnFreePort(
          `${dir}/open.yaml`,
          (port) =>
            config(
              port,
              "  allow_insecure_bind: true\n  allowed_hosts: [console.test]",
              "data-open",
            ),
          { cwd: dir },
        ),
      ]);
      if (launched.status === "fulfilled") browser = launched.value;
      for (const r of [tls, opened]) if (r.status === "fulfilled") runtimes.push(r.value);
      if (launched.status === "rejected") throw launched.reason;
      if (tls.status === "rejected") throw tls.reason;
      if (opened.status === "rejected") throw opened.reason;
      const web = launched.value;
      const open = opened.value;
      const tlsPort = tls.value.port;
      const client = Deno.createHttpClient({ caCerts: [pem] });
      const context = await web.newContext({ ignoreHTTPSErrors: true });
      try {
        const page = await context.newPage();
        const errors = collectPageErrors(page);
        const seen: { url: string; auth: string | undefined }[] = [];
        page.on("request", (r) => seen.push({ url: r.url(), auth: r.headers()["authorization"] }));
        const origin = `https://${lan}:${tlsPort}`;

        await step("the page loads without a token and asks for one", async () => {
          await page.goto(`${origin}/`);
          await page.locator("#token-dialog[open]").waitFor();
          assert.equal(await page.locator("#token-refused").isVisible(), false);
          assert.equal(await page.locator("#estop").isVisible(), true);
        });

        // The event stream's request with the wrong token is answered only after the right token
        // was entered (as a loaded machine may answer it): its late 401 must not ask again.
        let releaseStream = () => {};
        const streamHeld = new Promise<void>((resolve) => releaseStream = resolve);
        let heldStreamRequests = 0;
        await page.route("**/v0/events*", async (route) => {
          if (route.request().headers()["authorization"] === "Bearer wrong-token") {
            heldStreamRequests++;
            await streamHeld;
          }
          await route.continue();
        });

        await step("a wrong token is refused and asked for again", async () => {
          await page.locator("#token-input").fill("wrong-token");
          await page.locator("#token-input").press("Enter");
          await page.locator("#token-refused").waitFor({ state: "visible" });
          assert.equal(await page.locator("#token-dialog").isVisible(), true);
          await waitFor("the stream's request with the wrong token", () => heldStreamRequests >= 1);
        });

        await step("the right token opens the API and the event stream", async () => {
          await page.locator("#token-input").fill(TOKEN);
          await page.getByRole("button", { name: "Use token" }).click();
          await page.locator("#token-dialog").waitFor({ state: "hidden" });
          releaseStream(); // its 401 arrives now, after the right token
          await waitForText(page, "#runtime-name", /^panel-test$/);
          await waitForText(page, "#conn", /^Live$/);
          await waitForText(page, signal("last_choice"), /^“”$/);
          assert.equal(await page.locator("#token-dialog").isVisible(), false, "asked again");
        });

        await step("the token is kept per tab and travels only in the header", async () => {
          assert.equal(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY), TOKEN);
          assert.deepEqual(seen.filter((r) => r.url.includes(TOKEN)), []);
          const events = seen.filter((r) => new URL(r.url).pathname === "/v0/events");
          assert.ok(events.length >= 1);
          assert.equal(events.at(-1)?.auth, `Bearer ${TOKEN}`);
          const statics = seen.filter((r) => !new URL(r.url).pathname.startsWith("/v0/"));
          assert.ok(statics.length >= 3, JSON.stringify(statics));
          assert.ok(statics.every((r) => r.auth === undefined), "the files load without the token");
        });

        await step("read-only functions run in IDLE, actuating ones are refused", async () => {
          assert.equal(await page.locator(PING).getAttribute("class"), "fn fn-read");
          assert.equal(await page.locator(`${PING} .badge`).textContent(), "read-only");
          assert.equal(await page.locator(CONFIGURE).getAttribute("class"), "fn fn-actuating");
          assert.match(await run(page, PING, "ping"), /^OK at /);
          await waitForText(page, signal("pings"), /^1$/);
          assert.match(await run(page, REFUSE, "refuse"), /^409 FAILED_PRECONDITION: .*IDLE/);
        });

        await step("arming from the LAN address passes the request policy", async () => {
          await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
          await waitForText(page, "#mode", /^MANUAL$/);
          // Automation is disabled: AUTO is not offered.
          const offered = await page.locator("#mode-buttons button").evaluateAll((els) =>
            els.map((e) => e.getAttribute("data-mode"))
          );
          assert.deepEqual(offered, ["IDLE", "FAULT"]);
        });

        await step("the device's own refusal is shown as the runtime words it", async () => {
          const res = await apiFetch(`https://127.0.0.1:${tlsPort}/v0/call`, {
            client,
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify({ provider_id: "form0", device_id: "panel0", function_id: 3 }),
          });
          const body = await res.json();
          assert.equal(
            await run(page, REFUSE, "refuse"),
            `${res.status} ${body.status.code}: ${body.status.message}`,
          );
          assert.match(body.status.message, /the panel is locked/);
        });

        await step(
          "a form built from the ArgSpecs checks every type before sending",
          async () => {
            const form = page.locator(CONFIGURE);
            const options = await form.getByLabel("choice").locator("option").evaluateAll((els) =>
              els.map((e) => e.getAttribute("value"))
            );
            assert.deepEqual(options, ["", "low", "medium", "high"]);
            assert.equal(await form.getByLabel("enabled").getAttribute("type"), "checkbox");
            await form.getByLabel("level").fill("abc");
            await form.getByLabel("count").fill("2.5");
            await form.getByLabel("offset").fill("-1");
            await form.getByLabel("blob").fill("@@");
            assert.equal(
              await run(page, CONFIGURE, "configure"),
              "Not sent: 5 field(s) need fixing.",
            );
            const shown = await form.locator(".field-error").allTextContents();
            assert.deepEqual(shown, [
              'level: must be a number, got "abc"',
              'count: must be a whole number, got "2.5"',
              "offset: must not be negative (uint64), got -1",
              "",
              "choice: is required",
              "",
              "blob: must be base64 (A-Z a-z 0-9 + / with = padding)",
            ]);
            await form.getByLabel("level").fill("10.5");
            await form.getByLabel("count").fill("6");
            await form.getByLabel("offset").fill("1001");
            await form.getByLabel("blob").fill("");
            await form.getByLabel("choice").selectOption("high");
            await run(page, CONFIGURE, "configure");
            assert.deepEqual(
              (await form.locator(".field-error").allTextContents()).filter((x) => x),
              [
                "level: 10.5 is above the maximum 10",
                "count: 6 is above the maximum 5",
                "offset: 1001 is above the maximum 1000",
              ],
            );
          },
        );

        await step("a call with every type reaches the device as entered", async () => {
          const form = page.locator(CONFIGURE);
          await form.getByLabel("level").fill("-2.5");
          await form.getByLabel("count").fill("3");
          await form.getByLabel("offset").fill("");
          await form.getByLabel("enabled").check();
          await form.getByLabel("choice").selectOption("medium");
          await form.getByLabel("note").fill("hello console");
          await form.getByLabel("blob").fill("AQID");
          assert.match(await run(page, CONFIGURE, "configure"), /^OK at /);
          await waitForText(page, signal("last_level"), /^-2\.5$/);
          await waitForText(page, signal("last_count"), /^3$/);
          await waitForText(page, signal("last_offset"), /^-1$/); // omitted: not sent
          await waitForText(page, signal("last_enabled"), /^true$/);
          await waitForText(page, signal("last_choice"), /^medium$/);
          await waitForText(page, signal("last_note"), /^hello console$/);
          await waitForText(page, signal("last_blob"), /^010203$/);
        });

        await step("views of disabled subsystems show the runtime's answer", async () => {
          await page.locator('.tabs a[href="#parameters"]').click();
          await waitForText(
            page,
            "#parameters",
            /^503 UNAVAILABLE: Parameters not available: automation is disabled$/,
          );
          await page.locator('.tabs a[href="#devices"]').click();
        });

        await step("a reload keeps the token; a new tab asks again", async () => {
          await page.reload();
          await waitForText(page, "#conn", /^Live$/);
          await waitForText(page, "#mode", /^MANUAL$/);
          assert.equal(await page.locator("#token-dialog").isVisible(), false);
          const other = await context.newPage();
          try {
            let streams = 0;
            other.on("request", (r) => {
              if (new URL(r.url()).pathname === "/v0/events") streams++;
            });
            await other.goto(`${origin}/`);
            await other.locator("#token-dialog[open]").waitFor();
            await other.getByRole("button", { name: "Cancel" }).click();
            await waitForText(other, "#refresh-error", /^401 UNAUTHENTICATED: /);
            // Cancelled: the stream keeps retrying (and is refused) without asking again.
            const before = streams;
            const deadline = Date.now() + PAGE_WAIT_MS;
            while (streams < before + 2) {
              assert.ok(Date.now() < deadline, "the stream stopped retrying");
              await other.waitForTimeout(50);
            }
            assert.equal(await other.locator("#token-dialog").isVisible(), false);
            await other.getByRole("button", { name: "Enter API token" }).click();
            await other.locator("#token-input").fill(TOKEN);
            await other.locator("#token-input").press("Enter");
            await waitForText(other, "#conn", /^Live$/);
            await waitForText(other, "#runtime-name", /^panel-test$/);
          } finally {
            await other.close();
          }
        });

        const real = errors.filter((e) => !/Failed to load resource/.test(e));
        assert.deepEqual(real, []);
      } finally {
        await context.close();
        client.close();
      }

      await step(
        "without auth: by IP address or an allowed host name the page may arm",
        async () => {
          const port = open.port;
          const page = await web.newPage();
          try {
            for (const host of [lan, "console.test"]) {
              await page.goto(`http://${host}:${port}/`);
              await waitForText(page, "#conn", /^Live$/);
              const target = host === lan ? "MANUAL" : "IDLE";
              await page.locator(`#mode-buttons [data-mode="${target}"]`).click();
              await waitForText(page, "#mode", new RegExp(`^${target}$`));
            }
          } finally {
            await page.close();
          }
        },
      );

      await step(
        "without auth: by another name the refusal and its remedy are shown",
        async () => {
          const port = open.port;
          const page = await web.newPage();
          try {
            await page.goto(`http://other.test:${port}/`);
            await waitForText(page, "#mode", /^IDLE$/);
            await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
            const text = await waitForText(page, "#mode-result", /^403 /);
            assert.equal(
              text,
              `403 PERMISSION_DENIED: Origin not allowed to change state: 'http://other.test:${port}' ` +
                "(list it in http.cors_allowed_origins, `*` does not count, or send the bearer " +
                "token) — Opened under a host name? List it in http.allowed_hosts, or open the " +
                "console by IP address.",
            );
            await waitForText(page, "#mode", /^IDLE$/);
          } finally {
            await page.close();
          }
        },
      );
    } finally {
      await browser?.close();
      for (const r of runtimes) await r.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
