/**
 * The shared rig of the console's token tests (console_estop_declined_token_test.ts,
 * console_incident_download_token_test.ts): the runtime as a real process with the simulated
 * provider, auth on and loopback not exempt, an admin token from the environment and one
 * operator's named token ('shift') that a reload rotates; the page in headless Chromium; the token
 * prompt entered or cancelled.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { type ChromiumSession, launchChromiumAlongside, waitForText } from "../helpers/browser.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type RuntimeChild, startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";
import { simRuntimeConfig } from "../helpers/sim_config.ts";

/**
 * runtime.yaml named `name`, data under `dir`, serving on `port` with auth on (loopback not
 * exempt), 'shift' an operator's token `token`, `extra` (whole YAML lines) before the simulated
 * provider sim0.
 */
export function shiftTokenYaml(
  o: { dir: string; port: number; name: string; token: string; extra?: string },
): string {
  return `runtime: {name: ${o.name}, data_dir: ${o.dir}/data}
http:
  port: ${o.port}
  auth_enabled: true
  auth_exempt_loopback: false
  tokens:
    - {name: shift, role: operator, token: ${o.token}}
${o.extra ?? ""}${simRuntimeConfig()}`;
}

/** What `withConsoleRuntime` gives its body. */
export interface ConsoleRuntime {
  readonly browser: ChromiumSession;
  readonly rt: RuntimeChild;
  /** Writes `yaml(dir, port)` (the tokens `token`) as runtime.yaml and reloads it (SIGHUP). */
  reloadWith(token: string): Promise<void>;
}

/**
 * Runs `body` over Chromium and the runtime started on `yaml` with 'shift' the token `token`
 * (`admin` the admin's token, from RUNTIME_API_TOKEN), in a fresh temp folder named `prefix`;
 * afterwards closes the browser, asserts the runtime stopped with exit code 0 and removes the
 * folder, whatever `body` came to.
 */
export async function withConsoleRuntime(
  o: {
    prefix: string;
    admin: string;
    token: string;
    yaml: (dir: string, port: number, token: string) => string;
  },
  body: (r: ConsoleRuntime) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: o.prefix });
  const config = `${dir}/runtime.yaml`;
  const [browser, rt] = await launchChromiumAlongside(
    startRuntimeChildOnFreePort(async (port) => {
      await Deno.writeTextFile(config, o.yaml(dir, port, o.token));
      return { config, port, env: { RUNTIME_API_TOKEN: o.admin }, token: o.admin };
    }),
    (r) => r.stop(),
  );
  try {
    await body({
      browser,
      rt,
      async reloadWith(token) {
        await Deno.writeTextFile(config, o.yaml(dir, rt.port, token));
        rt.signal("SIGHUP");
        await waitFor("the reload summary", () => /config reload: /.test(rt.stderr()));
      },
    });
  } finally {
    await browser.close();
    assert.equal(await rt.stop(), 0, rt.stderr());
    await Deno.remove(dir, { recursive: true });
  }
}

/** Enters `token` at the open token prompt and waits for the prompt to close. */
export async function enterToken(page: Page, token: string): Promise<void> {
  await page.locator("#token-dialog[open]").waitFor();
  await page.locator("#token-input").fill(token);
  await page.getByRole("button", { name: "Use token" }).click();
  await page.locator("#token-dialog").waitFor({ state: "hidden" });
}

/**
 * A reload rotates shift's token to `rotated` while the page is open: the page's next read is
 * refused, its prompt opens and the operator cancels it; the page shows the refusal.
 */
export async function rotateAndCancel(
  page: Page,
  r: ConsoleRuntime,
  rotated: string,
): Promise<void> {
  await r.reloadWith(rotated);
  await page.locator("#token-dialog[open]").waitFor();
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.locator("#token-dialog").waitFor({ state: "hidden" });
  await waitForText(page, "#refresh-error", /^401 UNAUTHENTICATED: /);
}
