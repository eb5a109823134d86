/**
 * systemd readiness notification (sd_notify protocol) for `Type=notify` units.
 *
 * Why `systemd-notify` rather than writing to NOTIFY_SOCKET ourselves: Deno has no stable
 * unix-datagram API (Deno.listenDatagram needs --unstable-net and cannot address abstract
 * `@` sockets), and systemd-notify (systemd >= 246, so Raspberry Pi OS bookworm's 252 too) sends
 * a `BARRIER=1` after the message and waits until the manager has processed it. That wait closes
 * the classic race where a short-lived sender exits before systemd can map its PID to the unit,
 * so `NotifyAccess=all` in the unit works reliably.
 *
 * Every function here is a no-op without NOTIFY_SOCKET (terminal, tests, Type=exec) and never
 * throws: a failed notification is logged, it must never stop the service.
 */
import { errorMessage, type Logger } from "../common/mod.ts";

/** Upper bound on one systemd-notify run (its own barrier wait is 5 s). */
export const NOTIFY_TIMEOUT_MS = 10_000;

/** Overrides for tests; production code passes none. */
export interface NotifyOptions {
  /** NOTIFY_SOCKET to use instead of the one captured from the environment. */
  readonly socket?: string;
  /** Executable to run; default `systemd-notify` (looked up on PATH). */
  readonly command?: string;
  /** Kill systemd-notify after this long; default NOTIFY_TIMEOUT_MS. */
  readonly timeoutMs?: number;
}

/** undefined: not read yet; null: not running under a notify-type unit. */
let captured: string | null | undefined;

/**
 * Reads NOTIFY_SOCKET once and removes it from this process's environment, so provider processes
 * spawned afterwards do not inherit it (with NotifyAccess=all a provider using sd_notify could
 * otherwise declare the service ready too early). Call before starting providers. Returns the
 * socket, or null when the service manager did not ask for notifications.
 */
export function detachNotifySocket(): string | null {
  if (captured !== undefined) return captured;
  captured = null;
  try {
    const value = Deno.env.get("NOTIFY_SOCKET");
    if (value !== undefined) Deno.env.delete("NOTIFY_SOCKET");
    if (value) captured = value;
  } catch {
    // no env permission for NOTIFY_SOCKET: behave as if unset
  }
  return captured;
}

/**
 * Tells systemd the service is ready (READY=1): call once providers are up and the API listens.
 * Resolves true when the notification was delivered, false when skipped or failed.
 */
export function notifyReady(log: Logger, options: NotifyOptions = {}): Promise<boolean> {
  return sendNotify(log, ["READY=1", "STATUS=ready"], options);
}

/**
 * Tells systemd the service is shutting down (STOPPING=1): call when shutdown begins.
 * Resolves true when the notification was delivered, false when skipped or failed.
 */
export function notifyStopping(log: Logger, options: NotifyOptions = {}): Promise<boolean> {
  // `--stopping` only exists from systemd 253 on; the assignment form works on every version.
  return sendNotify(log, ["STOPPING=1", "STATUS=stopping"], options);
}

async function sendNotify(
  log: Logger,
  assignments: readonly string[],
  options: NotifyOptions,
): Promise<boolean> {
  const socket = options.socket ?? detachNotifySocket();
  if (!socket) return false;
  const command = options.command ?? "systemd-notify";
  const what = assignments[0];
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(command, {
      args: [...assignments],
      // Passed explicitly: detachNotifySocket() removed it from our own environment.
      env: { NOTIFY_SOCKET: socket },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (e) {
    log.warn(`systemd notification ${what} not sent: cannot run ${command}: ${errorMessage(e)}`);
    return false;
  }
  const timeoutMs = options.timeoutMs ?? NOTIFY_TIMEOUT_MS;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
  }, timeoutMs);
  try {
    const [status, stderr] = await Promise.all([
      child.status,
      new Response(child.stderr).text().catch(() => ""),
    ]);
    if (status.success) {
      log.debug(`systemd notified: ${what}`);
      return true;
    }
    const reason = timedOut
      ? `no answer within ${timeoutMs} ms`
      : `${command} exited with ${status.code}${stderr.trim() ? `: ${stderr.trim()}` : ""}`;
    log.warn(`systemd notification ${what} not confirmed: ${reason.replace(/\n/g, " ")}`);
    return false;
  } catch (e) {
    log.warn(`systemd notification ${what} failed: ${errorMessage(e)}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}
