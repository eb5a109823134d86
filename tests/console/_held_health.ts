/**
 * The health reads of a page whose ages and countdowns the test moves with the page's own clock
 * (console_restart_countdown_test.ts, console_health_ages_test.ts). The page renders each health
 * answer against its clock at arrival and asks for the health several times as it loads (view
 * switch, full refresh, refresh cycle): a second answer arriving after the test's first 1 s tick
 * (a loaded machine) moved what it shows back by that second. So the first read gets the
 * runtime's answer and every later one is held until `release()` (call it once the first answer
 * is shown), then refused (503): nothing but the page's tick moves what it shows.
 */
import type { Page } from "playwright-core";

export async function answerHealthOnce(page: Page): Promise<{ release: () => void }> {
  let served = false;
  const shown = Promise.withResolvers<void>();
  await page.route("**/v0/providers/health", async (route) => {
    if (!served) {
      served = true;
      return await route.fulfill({ response: await route.fetch() });
    }
    await shown.promise;
    await route.fulfill({
      status: 503,
      contentType: "application/json",
      body: JSON.stringify({ status: { code: "UNAVAILABLE", message: "held by the test" } }),
    });
  });
  return { release: () => shown.resolve() };
}
