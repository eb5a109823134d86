/**
 * A program (run as a process of its own by tests/meta/browser_signals_test.ts): launches the
 * tests' Chromium (launchChromium), listens for SIGTERM (so that the signal does not end it),
 * sends itself SIGTERM, waits SETTLE_MS and prints whether the browser is still connected.
 */
import { launchChromium } from "./browser.ts";

const SETTLE_MS = 1500;

const browser = await launchChromium();
let received = false;
Deno.addSignalListener("SIGTERM", () => (received = true));
Deno.kill(Deno.pid, "SIGTERM");
await new Promise((r) => setTimeout(r, SETTLE_MS));
console.log(JSON.stringify({ received, connected: browser.isConnected() }));
await browser.close();
Deno.exit(0);
