/**
 * Test helper: what the service does at start and stop, in a process of its own so that
 * NOTIFY_SOCKET comes from the real environment. Prints one JSON object on stdout:
 * `{ detached, envAfter, ready, stopping, logs }`. Optional argument: the notify command to use.
 */
import { detachNotifySocket, notifyReady, notifyStopping } from "../../src/host/mod.ts";
import type { Logger } from "../../src/common/mod.ts";

const logs: string[] = [];
const log: Logger = {
  debug: (m) => logs.push(`debug: ${m}`),
  info: (m) => logs.push(`info: ${m}`),
  warn: (m) => logs.push(`warn: ${m}`),
  error: (m) => logs.push(`error: ${m}`),
  child: () => log,
};
const options = Deno.args[0] ? { command: Deno.args[0] } : {};

const detached = detachNotifySocket();
const envAfter = Deno.env.get("NOTIFY_SOCKET") ?? null;
const ready = await notifyReady(log, options);
const stopping = await notifyStopping(log, options);
console.log(JSON.stringify({ detached, envAfter, ready, stopping, logs }));
