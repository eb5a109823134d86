/**
 * Regenerates the operator console's screenshots in docs/console/ (deno task
 * console:screenshots): runs the demo configuration with its alarms (examples/alarms.yaml) as the
 * real runtime, operates it from the page in headless Chromium (Debian's `chromium`, as the
 * browser tests use) and captures the main views (a trend and an incident page too), desktop and
 * tablet. Values differ from run to
 * run; the layout is what matters.
 */
import type { Page } from "playwright-core";
import { launchChromium, waitForText } from "../tests/helpers/browser.ts";
import {
  freePort,
  startRuntimeChild,
  withCheckoutMirror,
} from "../tests/helpers/runtime_process.ts";

const REPO = new URL("../", import.meta.url).pathname;
const OUT = `${REPO}docs/console`;
const DESKTOP = { width: 1280, height: 860 };
const TABLET = { width: 820, height: 1180 };

async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: `${OUT}/${name}.png`, fullPage });
  console.log(`wrote docs/console/${name}.png`);
}

async function view(page: Page, name: string, ready: string): Promise<void> {
  await page.locator(`.tabs a[href="#${name}"]`).click();
  await page.locator(ready).first().waitFor();
  await page.waitForTimeout(600); // let the next refresh fill ages and counters
}

await Deno.mkdir(OUT, { recursive: true });
const demo = await Deno.readTextFile(`${REPO}examples/alarms.yaml`);
await withCheckoutMirror(demo, async (dir) => {
  const port = freePort();
  const rt = await startRuntimeChild({
    config: `${dir}/config.yaml`,
    port,
    args: ["--port", String(port)],
    cwd: dir,
  });
  const startedAt = Date.now();
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${rt.base}/`);
    await waitForText(page, "#conn", /^Live$/);
    await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
    await waitForText(page, "#mode", /^MANUAL$/);
    const motor = page.locator('form[data-fn="sim0/motorctl0/10"]');
    await motor.getByLabel("motor_index").fill("1");
    await motor.getByLabel("duty").fill("0.5");
    await motor.getByRole("button", { name: "Run set_motor_duty" }).click();
    await waitForText(page, 'tr[data-signal="sim0/motorctl0/motor1_duty"] td.value', /^0\.5$/);
    await page.waitForTimeout(1500);
    await shot(page, "devices");

    await page.setViewportSize(TABLET);
    await page.waitForTimeout(300);
    await shot(page, "tablet");
    await page.setViewportSize(DESKTOP);

    await view(page, "health", '[data-provider="sim0"]');
    await shot(page, "health");

    await page.locator('#mode-buttons [data-mode="AUTO"]').click();
    await waitForText(page, "#mode", /^AUTO$/);
    await view(page, "automation", "#automation-tree .outline");
    await waitForText(page, "#automation-status", /Ticks[1-9]\d* total/);
    await shot(page, "automation");

    // Trend: the heater's temperature (click its value) and motor 1's speed (the add menu) while
    // the tree heats and then runs the motor; drawn at the end over the whole run (below).
    await page.locator('.tabs a[href="#devices"]').click();
    await page.locator('tr[data-signal="sim0/tempctl0/tc1_temp"] td.value a').click();
    await page.locator("#trend .chart[data-axes]").waitFor();
    await page.locator("#trend-add").selectOption("sim0/motorctl0/motor1_speed");
    await page.getByRole("button", { name: "Add to chart" }).click();
    await page.locator('#trend .chart[data-axes="C|rpm"]').waitFor();

    await page.locator("#estop").click();
    await waitForText(page, "#estop-result .estop-summary", /^Latched\./);
    await page.waitForTimeout(600);
    await shot(page, "estop");

    // Alarms: re-arm, relay 4 on (an alarm), the heater held at 55 °C in closed loop (the
    // interlock blocks above 45 °C, the warning raises above 50 °C; the stop is at 60 °C).
    await page.locator("#estop-result-hide").click();
    await page.locator("#estop-clear").click();
    await page.locator("#clear-confirm").click();
    await waitForText(page, "#latch", /^released$/);
    await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
    await waitForText(page, "#mode", /^MANUAL$/);
    await page.locator('.tabs a[href="#devices"]').click();
    await page.locator('form[data-fn="sim0/relayio0/4"]').getByLabel("enabled").check();
    await page.locator('form[data-fn="sim0/relayio0/4"]').getByRole("button").click();
    const tempctl = (fn: number) => page.locator(`form[data-fn="sim0/tempctl0/${fn}"]`);
    await tempctl(2).getByLabel("value").fill("55");
    await tempctl(2).getByRole("button").click();
    await tempctl(1).getByLabel("mode").fill("closed");
    await tempctl(1).getByRole("button").click();
    await view(page, "alarms", 'tr[data-alarm="relay4_on"][data-state="active"]');
    await page.locator('tr[data-alarm="tc1_high"][data-state="active"]').waitFor({
      timeout: 30000,
    });
    await page.locator('tr[data-alarm="relay4_on"] summary').click();
    await page.waitForTimeout(600);
    await shot(page, "alarms", true);

    // The trend over the whole run: heating in AUTO, the e-stop, the closed loop at 55 °C.
    const trendUrl = new URL(page.url());
    trendUrl.hash = "#trend?s=sim0%2Ftempctl0%2Ftc1_temp&s=sim0%2Fmotorctl0%2Fmotor1_speed" +
      `&r=custom&from=${startedAt}&to=${Date.now()}`;
    await page.goto(trendUrl.href);
    await page.locator('#trend .chart[data-axes="C|rpm"][data-source]').waitFor();
    await page.waitForTimeout(600);
    await shot(page, "trend");

    // The e-stop's incident page: its chart with the trigger marked, cause and downloads.
    await page.locator('.tabs a[href="#incidents"]').click();
    const estopRow = page.locator("#incidents tr[data-incident]", { hasText: "E-stop" }).first();
    await estopRow.getByRole("link", { name: "Open" }).click();
    await page.locator("#incidents .chart[data-axes]").waitFor();
    await page.waitForTimeout(600);
    await shot(page, "incident", true);
  } finally {
    await browser.close();
    await rt.stop();
  }
});
