/**
 * Headless Chromium for the operator console's tests: Debian's `chromium` package driven by
 * playwright-core (which downloads no browser). Tests that need it skip with a loud message when
 * it is not installed (`.ci/run` installs it), like the time-series database tests.
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { apiAnswerProblem } from "./openapi_check.ts";

/** How long a test waits for something to appear on the page (a loaded CI machine is slow). */
export const PAGE_WAIT_MS = 20000;
/** How often {@link waitForText} looks again (a round trip to the page; most waits are short). */
const TEXT_POLL_MS = 25;

let warned = false;

/** The `chromium` executable on PATH, or null. */
export function chromiumPath(): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    for (const name of ["chromium", "chromium-browser"]) {
      try {
        const path = `${dir}/${name}`;
        if (Deno.statSync(path).isFile) return path;
      } catch {
        // not here
      }
    }
  }
  return null;
}

/** True when Chromium is missing; prints a loud message once so a skip is never silent. */
export function chromiumMissing(): boolean {
  const missing = chromiumPath() === null;
  if (missing && !warned) {
    warned = true;
    console.warn(
      "\n!!!!!!!! chromium not found on PATH: operator console browser tests are SKIPPED. " +
        "Install it with: apt-get install -y chromium !!!!!!!!\n",
    );
  }
  return missing;
}

/**
 * Launches headless Chromium of its own (extra command-line switches in `args`), for scripts and
 * benches; a test opens a {@link ChromiumSession} instead ({@link openChromium}). Signals to the
 * process leave it alone: Playwright closes its browsers on SIGINT, SIGTERM and SIGHUP by
 * default, and the suite's shards run as workers of one process, so a signal one file's test
 * meant for its own service closed the Chromium of another file's test. Chromium still ends with
 * the process: it is driven over a pipe and exits when the pipe closes.
 */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === null) throw new Error("chromium not found on PATH");
  return await chromium.launch({
    executablePath,
    headless: true,
    args,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
}

/** The options of a page a {@link ChromiumSession} opens (those of a browser context). */
export type PageOptions = Parameters<Browser["newPage"]>[0];

/**
 * A test's headless Chromium: pages of its own, each in a fresh browser context (its own storage,
 * cache, clock, routes and init scripts: nothing carries over from another test), on the one
 * Chromium its isolate shares ({@link openChromium}).
 */
export interface ChromiumSession {
  /** A fresh context (as Playwright's `Browser.newContext`), closed with the session. */
  newContext(options?: PageOptions): Promise<BrowserContext>;
  /** A page in a fresh context of its own (as Playwright's `Browser.newPage`). */
  newPage(options?: PageOptions): Promise<Page>;
  /** Closes this session's contexts and their pages; the Chromium stays for the next test. */
  close(): Promise<void>;
}

/**
 * The Chromium each set of switches launched in this isolate (a shard of the suite,
 * tests/shards/shard.ts, or a test file run alone: one launch per isolate, not one per test),
 * closed once the isolate's tests have run.
 */
const sharedBrowsers = new Map<string, Promise<Browser>>();
Deno.test.afterAll(async () => {
  const launches = [...sharedBrowsers.values()];
  sharedBrowsers.clear();
  for (const launch of launches) await (await launch.catch(() => null))?.close();
});

/** This isolate's Chromium launched with `args`: launched on first use, again if it went away. */
async function sharedChromium(args: string[]): Promise<Browser> {
  const key = JSON.stringify(args);
  const known = sharedBrowsers.get(key);
  if (known !== undefined) {
    const browser = await known.catch(() => null);
    if (browser?.isConnected()) return browser;
    if (sharedBrowsers.get(key) === known) sharedBrowsers.delete(key);
    return await sharedChromium(args);
  }
  const launch = launchChromium(args);
  sharedBrowsers.set(key, launch);
  return await launch;
}

/**
 * Opens a test's Chromium session (extra command-line switches in `args`) on the isolate's
 * Chromium launched with those switches: launching Chromium for every test cost seconds each
 * (launch and close), most of a short console test. Close it in a `finally`.
 */
export async function openChromium(args: string[] = []): Promise<ChromiumSession> {
  const browser = await sharedChromium(args);
  const contexts: BrowserContext[] = [];
  const newContext = async (options?: PageOptions) => {
    const context = await browser.newContext(options);
    contexts.push(context);
    return context;
  };
  return {
    newContext,
    newPage: async (options) => await (await newContext(options)).newPage(),
    async close() {
      // A context of a Chromium that went away (crashed) is closed already.
      for (const context of contexts.splice(0)) await context.close().catch(() => {});
    },
  };
}

/**
 * Opens the test's Chromium session ({@link openChromium}) while `other` (a runtime starting, say)
 * is under way, so that a test waits for the longer of the two instead of their sum. When either
 * fails, the one that succeeded is undone (the session closed, `undo` called with the other's
 * value) and the failure is thrown.
 */
export async function launchChromiumAlongside<T>(
  other: Promise<T>,
  undo: (value: T) => Promise<unknown>,
  args: string[] = [],
): Promise<[ChromiumSession, T]> {
  const [browser, value] = await Promise.allSettled([openChromium(args), other]);
  if (browser.status === "fulfilled" && value.status === "fulfilled") {
    return [browser.value, value.value];
  }
  if (browser.status === "fulfilled") await browser.value.close();
  if (value.status === "fulfilled") await undo(value.value);
  throw browser.status === "rejected" ? browser.reason : (value as PromiseRejectedResult).reason;
}

/**
 * Collects the page's uncaught errors and console errors (a test asserts there are none), and
 * every API answer the page got that GET /v0/openapi.json's document does not allow
 * (openapi_check.ts; an event stream by status and content type).
 */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console.error: ${m.text()}`);
  });
  page.on("response", (r) => {
    const path = new URL(r.url()).pathname;
    if (!path.startsWith("/v0/") && path !== "/metrics") return;
    const method = r.request().method();
    const contentType = r.headers()["content-type"] ?? null;
    const bodyless = method === "HEAD" || (contentType ?? "").startsWith("text/event-stream");
    (bodyless ? Promise.resolve("") : r.text()).then((body) => {
      const problem = apiAnswerProblem({ method, path, status: r.status(), contentType, body });
      if (problem !== "") {
        errors.push(
          `answer not in the OpenAPI document: ${method} ${path} -> ${r.status()}: ${problem}`,
        );
      }
    }, () => {}); // the page went away before the body was read
  });
  return errors;
}

/**
 * The page's global object inside functions Playwright runs in the browser: Deno's type checker
 * has no DOM library, and the cast is gone once the function is sent to the page.
 */
// deno-lint-ignore no-explicit-any
export type PageGlobal = any;

/**
 * Waits until the text of the first element `selector` (a Playwright selector) matches `test`;
 * returns the text. Fails naming the selector, the expectation and the last text seen.
 */
export async function waitForText(
  page: Page,
  selector: string,
  test: RegExp,
  timeout = PAGE_WAIT_MS,
): Promise<string> {
  const deadline = Date.now() + timeout;
  let last: string | null = null;
  for (;;) {
    last = await page.locator(selector).first().textContent({ timeout: 500 }).catch(() => null);
    if (last !== null && test.test(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(
        `${selector}: text never matched ${test} within ${timeout} ms (last: ${
          JSON.stringify(last)
        })`,
      );
    }
    await new Promise((r) => setTimeout(r, TEXT_POLL_MS));
  }
}

/**
 * Stops the page's clock just ahead of the page's own time (`aheadMs`; due timers fire on the way):
 * from then on its timers run only when the test moves the clock (`page.clock.runFor`). On a
 * loaded machine the page's time may pass the target before the pause lands ("Cannot
 * fast-forward to the past"; Playwright's pause makes a round trip to every page before it acts):
 * read it again and retry, ahead by twice the round trip that failed. The clock must be installed.
 */
export async function pauseClockNow(page: Page, aheadMs = 1): Promise<void> {
  let ahead = aheadMs;
  for (let attempt = 1;; attempt++) {
    const sent = Date.now();
    try {
      await page.clock.pauseAt(await page.evaluate((ms) => Date.now() + ms, ahead));
      return;
    } catch (err) {
      if (attempt >= 20 || !/fast-forward to the past/.test(String(err))) throw err;
      ahead = aheadMs + 2 * (Date.now() - sent);
    }
  }
}

/**
 * Installs the page's clock stopped, before the page loads (call it before `page.goto`): the
 * page's timers (its 2 s refresh, the stream's backoff) run only when the test moves the clock,
 * however long the load takes on a loaded machine. A pause after the load could land after the
 * first refresh, or ask for a time already past.
 */
export async function installStoppedClock(page: Page): Promise<void> {
  await page.clock.install();
  await pauseClockNow(page);
}

/** How long {@link readsSettled} waits, once no read is in flight, for a read one set off. */
const SETTLE_GAP_MS = 100;

/**
 * Counts the page's requests in flight from now on (those `counted` keeps: all by default); the
 * function returned resolves once none is, and still none after SETTLE_GAP_MS (an answer that
 * sets off another read has done so), each wait within PAGE_WAIT_MS.
 */
export function readsSettled(
  page: Page,
  counted: (r: { url(): string }) => boolean = () => true,
): () => Promise<void> {
  let inFlight = 0;
  page.on("request", (r) => counted(r) && inFlight++);
  page.on("requestfinished", (r) => counted(r) && inFlight--);
  page.on("requestfailed", (r) => counted(r) && inFlight--);
  const idle = async () => {
    const deadline = Date.now() + PAGE_WAIT_MS;
    while (inFlight !== 0) {
      if (Date.now() > deadline) throw new Error("timed out waiting for the refresh settled");
      await new Promise((r) => setTimeout(r, TEXT_POLL_MS));
    }
  };
  return async () => {
    await idle();
    await new Promise((r) => setTimeout(r, SETTLE_GAP_MS));
    await idle();
  };
}

/** The header a test marks an answer it held with (see {@link NOTE_HELD_READ}). */
export const HELD = "x-test-held";

/**
 * An init script (`page.addInitScript`) that sets the page's `__heldRead` once the page's code
 * has read the body of an answer marked {@link HELD} (Response.text settled).
 */
export const NOTE_HELD_READ = `(() => {
  const text = Response.prototype.text;
  globalThis.__heldRead = false;
  Response.prototype.text = async function () {
    const body = await text.call(this);
    if (this.headers.has("${HELD}")) globalThis.__heldRead = true;
    return body;
  };
})()`;

/** Resolves once the page's code has read the body of the answer the test held ({@link HELD}). */
export async function heldAnswerRead(page: Page): Promise<void> {
  // deno-lint-ignore no-explicit-any
  await page.waitForFunction(() => (globalThis as any).__heldRead === true, undefined, {
    timeout: PAGE_WAIT_MS,
  });
}

/**
 * Steps that build on each other: once one fails, the later ones are reported as ignored
 * instead of each waiting out its own timeout against a page in the wrong state.
 */
export function sequentialSteps(
  t: Deno.TestContext,
): (name: string, fn: () => Promise<void>) => Promise<void> {
  let failed = false;
  return async (name, fn) => {
    if (failed) {
      await t.step({ name, ignore: true, fn: () => {} });
      return;
    }
    if (!(await t.step(name, fn))) failed = true;
  };
}
