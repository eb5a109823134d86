/**
 * The shared set-up of the scenarios of an actuating call refused because its provider is
 * unavailable (audit_provider_down_test.ts: crashed; audit_reload_restart_window_test.ts: a reload
 * restarting it): the programmable provider `pol` as a child process, its device `act0` declaring
 * two actuating functions, `pulse` (id 10, the e-stop's safe-state hook) and `vent` (id 11, the
 * hook call after every entry into FAULT, failOnError), in the HTTP fixture; every audit entry
 * recorded from the start.
 */
import { tempDir } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import type { TestConfigOptions } from "../helpers/sim_config.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";
import type { CallConfig } from "../../src/config/mod.ts";

/** FunctionPolicy category ACTUATE, as on the wire. */
const ACTUATE = 3;

/** `act0` with `pulse` (id 10) and `vent` (id 11), both actuating, no arguments, no signals. */
export const POL_INVENTORY: Inventory = {
  devices: {
    act0: {
      signals: [],
      functions: [
        { function_id: 10, name: "pulse", policy: { category: ACTUATE }, args: [] },
        { function_id: 11, name: "vent", policy: { category: ACTUATE }, args: [] },
      ],
    },
  },
};

const call = (name: string, path: string): CallConfig => ({
  deviceHandle: "pol/act0",
  functionId: 0,
  functionName: name,
  args: {},
  path,
});

/** What startPolWithHooks started; the test closes `fx`. */
export interface PolWithHooks {
  readonly fx: HttpFixture;
  /** pol's inventory file (POL_INVENTORY and `first` at start): rewrite it to change the next process. */
  readonly file: string;
  /** Every audit entry, in order. */
  readonly entries: AuditEntry[];
}

/**
 * Starts the fixture with `pol` (its first process reading POL_INVENTORY plus `first`), the
 * e-stop's safe-state hook `pulse` and the `* -> FAULT` hook call `vent`; `runtime` overrides
 * the configuration's `runtime:`.
 */
export async function startPolWithHooks(o: {
  readonly prefix: string;
  readonly first?: Partial<Inventory>;
  readonly runtime?: TestConfigOptions["runtime"];
}): Promise<PolWithHooks> {
  const file = `${tempDir(o.prefix)}/pol.json`;
  await Deno.writeTextFile(file, JSON.stringify({ ...POL_INVENTORY, ...o.first }));
  const fx = await startHttpFixture({
    config: {
      providers: [programmableProvider("pol", file)],
      ...(o.runtime ? { runtime: o.runtime } : {}),
      safety: { hooks: [call("pulse", "safety.safe_state.hooks[0]")] },
      automation: {
        modeTransitionHooks: {
          beforeTransition: [],
          afterTransition: [{
            from: "*",
            to: "FAULT",
            failOnError: true,
            path: "automation.mode_transition_hooks.after_transition[0]",
            calls: [call("vent", "automation.mode_transition_hooks.after_transition[0].calls[0]")],
          }],
        },
      },
    },
  });
  const entries: AuditEntry[] = [];
  fx.runtime.audit.onEntry((e) => entries.push(e));
  return { fx, file, entries };
}
