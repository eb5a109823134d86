/**
 * This process's session priority against the other sessions of the machine (Linux autogroups):
 * how it is set. When the runtime asks for it is src/app/session_priority.ts's (while a provider
 * is starting or down, the runtime's session runs ahead of the others).
 */
import type { PriorityResult } from "../common/mod.ts";

/**
 * How often setting it is tried when the kernel says "not now" (EAGAIN: a process without
 * CAP_SYS_ADMIN may set one autogroup's nice per 100 ms, machine-wide), AUTOGROUP_RETRY_MS apart.
 */
export const AUTOGROUP_MAX_TRIES = 20;

/** The wait before trying again after EAGAIN (the kernel's interval is 100 ms). */
export const AUTOGROUP_RETRY_MS = 110;

/**
 * One attempt, in a shell child of this process, the nice as `$1` (Deno refuses a process without
 * --allow-all its own /proc files, and the compiled binary has no --allow-all; the child shares
 * the runtime's session, so its write sets the runtime's autogroup, with the runtime's
 * RLIMIT_NICE). Exit codes: 0 set, 3 not the session leader, 4 no autogroup file, 5 EAGAIN, 6
 * another refusal (its message on stderr), 7 set while autogroups are off.
 */
export const SET_AUTOGROUP_SCRIPT = [
  "read -r line < /proc/$PPID/stat || exit 6",
  'rest=${line##*) }; set -- "$1" $rest; [ "$5" = "$PPID" ] || exit 3',
  "[ -e /proc/$PPID/autogroup ] || exit 4",
  // coreutils' echo says which error (the shell's built-in says "I/O error" for all of them)
  'if ! err=$(/bin/echo "$1" 2>&1 > /proc/$PPID/autogroup); then',
  '  case $err in *"temporarily unavailable"*) exit 5;; *) echo "$err" >&2; exit 6;; esac',
  "fi",
  '[ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 0 ] && exit 7',
  "exit 0",
].join("\n");

/** How setSessionPriority runs one attempt and waits between attempts (tests pass their own). */
export interface PriorityShell {
  /** Runs SET_AUTOGROUP_SCRIPT with `nice`: its exit code and stderr. */
  attempt(nice: number): Promise<{ code: number; stderr: string }>;
  later(fn: () => void, ms: number): void;
}

const shell: PriorityShell = {
  attempt: async (nice) => {
    const out = await new Deno.Command("/bin/sh", {
      args: ["-c", SET_AUTOGROUP_SCRIPT, "sh", String(nice)],
      env: { LC_ALL: "C" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
  },
  later: (fn, ms) => Deno.unrefTimer(setTimeout(fn, ms)),
};

/**
 * Sets this process's session to autogroup nice `nice`, when this process leads its session (as
 * under systemd, which starts a service in a session of its own): started from a shell, the
 * session is the shell's and is left alone. EAGAIN is tried again (AUTOGROUP_MAX_TRIES,
 * AUTOGROUP_RETRY_MS apart); not permitted (a nice below the current one needs CAP_SYS_NICE or
 * an RLIMIT_NICE that allows it, e.g. the unit's LimitNICE=-10), no autogroups in this kernel, or
 * no shell to run the attempt leave it as it was.
 */
export function setSessionPriority(
  nice: number,
  sh: PriorityShell = shell,
): Promise<PriorityResult> {
  return new Promise((resolve) => {
    const attempt = async (tries: number) => {
      let result: { code: number; stderr: string };
      try {
        result = await sh.attempt(nice);
      } catch (err) {
        return resolve({ outcome: "not_permitted", detail: `cannot run /bin/sh: ${err}` });
      }
      switch (result.code) {
        case 0:
          return resolve({ outcome: "set" });
        case 3:
          return resolve({ outcome: "not_session_leader" });
        case 4:
          return resolve({ outcome: "no_autogroups" });
        case 5:
          if (tries > 1) return sh.later(() => void attempt(tries - 1), AUTOGROUP_RETRY_MS);
          return resolve({ outcome: "busy" });
        case 7:
          return resolve({ outcome: "autogroups_off" });
        default:
          return resolve({
            outcome: "not_permitted",
            detail: result.stderr || `exit code ${result.code}`,
          });
      }
    };
    void attempt(AUTOGROUP_MAX_TRIES);
  });
}
