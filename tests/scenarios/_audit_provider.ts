/**
 * A provider for the audit scenarios, run as a real child process:
 * `deno run --allow-read tests/scenarios/_audit_provider.ts <audit folder>`. Device `rec0`:
 * - `act` (ACTUATE, id 1, argument `tag`, a string): answers `seen` (bool), whether a file of the
 *   audit folder held `tag` at the moment the call reached this provider -- the audit trail's
 *   promise that a decision is on disk before the provider receives the call.
 * - `fail_long` (ACTUATE, id 2): answers FAILED_PRECONDITION with a 100,000-character message.
 * - `echo` (ACTUATE, id 3, optional argument `text`, a string): answers OK.
 * - `hold_repeat` (ACTUATE, id 4, argument `tag`, a string): answers OK the first time a tag
 *   arrives; a later call with the same tag is never answered, and writes the file named by the
 *   second command-line argument (run with `--allow-write` for it) when it arrives.
 */
import {
  DeviceProvider,
  ProviderError,
  runStdioProvider,
  toWireValue,
} from "../../src/provider_sdk/mod.ts";

const auditDir = Deno.args[0] ?? "";
/** The file `hold_repeat` writes when it holds a call (none: not written). */
const heldFile = Deno.args[1] ?? "";
/** The tags `hold_repeat` answered. */
const answered = new Set<string>();

/** True when a file of the audit folder contains `tag` (read now, from the disk's page cache). */
function journalHolds(tag: string): boolean {
  try {
    for (const e of Deno.readDirSync(auditDir)) {
      if (e.isFile && Deno.readTextFileSync(`${auditDir}/${e.name}`).includes(tag)) return true;
    }
  } catch {
    // no folder yet
  }
  return false;
}

const provider = new DeviceProvider({ name: "audit-provider", version: "1.0.0" }, [{
  deviceId: "rec0",
  typeId: "test.recorder",
  typeVersion: "1.0",
  label: "Audit recorder",
  signals: [{ id: "x", name: "x", type: "double", pollHintHz: 1, staleAfterMs: 0, read: () => 1 }],
  functions: [
    {
      id: 1,
      name: "act",
      description: "Reports whether the audit journal held the tag when the call arrived",
      category: "ACTUATE",
      args: [{ name: "tag", type: "string" }],
      handler: (args) => ({ seen: toWireValue("bool", journalHolds(args.string("tag"))) }),
    },
    {
      id: 2,
      name: "fail_long",
      description: "Always fails with a 100,000-character message",
      category: "ACTUATE",
      handler: () => {
        throw ProviderError.failedPrecondition(`fail_long: ${"E".repeat(100_000)}`);
      },
    },
    {
      id: 3,
      name: "echo",
      description: "Accepts a text",
      category: "ACTUATE",
      args: [{ name: "text", type: "string", required: false }],
      handler: () => {},
    },
    {
      id: 4,
      name: "hold_repeat",
      description: "Answers a tag once; holds every later call with it unanswered",
      category: "ACTUATE",
      args: [{ name: "tag", type: "string" }],
      handler: (args) => {
        const tag = args.string("tag");
        if (!answered.has(tag)) {
          answered.add(tag);
          return {};
        }
        if (heldFile !== "") Deno.writeTextFileSync(heldFile, tag);
        return new Promise(() => {});
      },
    },
  ],
}]);

await runStdioProvider(provider);
