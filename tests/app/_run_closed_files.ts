/**
 * The shared rig of the run-close tests (kernel_run_close_*_test.ts): in-memory host files whose
 * run_closed appends can be held and failed, and a device call decision to write ahead.
 */
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { diskFullError } from "../helpers/journal_files.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

/**
 * In-memory files whose appends of a run_closed event wait for `gate` while it is set (counted in
 * `held`), then fail (a full disk) while `fail` is.
 */
export class HeldRunClosed extends MemoryFiles {
  gate: Promise<void> | null = null;
  held = 0;
  fail = false;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (text.includes('"category":"run_closed"')) {
          if (this.gate !== null) {
            this.held++;
            await this.gate;
          }
          if (this.fail) throw diskFullError();
        }
        await h.append(text);
      },
    };
  }
}

/** An HTTP decision to call sim0/motorctl0 set_motor_duty with duty `i`. */
export const decision = (i: number) => ({
  origin: { kind: "http" as const, address: "127.0.0.1", token_name: "local" },
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: i } },
});
