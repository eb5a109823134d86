/**
 * The shared rig of the host-unmet e-stop scenarios (estop_unlisted_uncovered_test.ts,
 * estop_zero_rung_unlisted_test.ts, estop_host_unmet_unverified_test.ts,
 * estop_host_unmet_comeback_test.ts): one programmable provider "pol" as a real child process,
 * reading its inventory from a file the test rewrites (HOST_UNMET_I2C1: up, its host check unmet,
 * no device listed), restarted at once by its supervisor when the test kills it, under the
 * safety configuration the test gives; the API served on loopback.
 */
import type { TestConfigOptions } from "../helpers/sim_config.ts";
import type { ProviderHost } from "../../src/providers/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import {
  HOST_UNMET_I2C1,
  type Inventory,
  programmableProvider,
  T,
} from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { Api } from "./alarms_helpers.ts";

export { HOST_UNMET_I2C1 };

/** Function category ACTUATE (ADPP): the ladder's to secure. */
export const ACTUATE = 3;

/** One device with a zeroable function (`set_on(on: bool)`: rung 3 sends on=false). */
export const SET_ON_DEVICE: Inventory = {
  devices: {
    act0: {
      signals: [],
      functions: [{
        function_id: 10,
        name: "set_on",
        policy: { category: ACTUATE },
        args: [{ name: "on", type: T.BOOL, required: true }],
      }],
    },
  },
};

/** The ladder's hook (rung 1) calling pol/act0's `pulse`. */
export const PULSE_HOOK = {
  deviceHandle: "pol/act0",
  functionId: 0,
  functionName: "pulse",
  args: {},
  path: "safety.safe_state.hooks[0]",
};

export interface HostUnmetRig {
  readonly rt: Kernel;
  /** The API served on loopback. */
  readonly api: Api;
  /** pol's inventory file, read by each of its processes at start (restartAs writes it). */
  readonly file: string;
  /**
   * Writes `inventory` to pol's file, kills `host`'s process and waits (30 s at most) until the
   * supervisor's next one is up and `ready(host)` holds.
   */
  restartAs(
    host: ProviderHost,
    inventory: Inventory,
    what: string,
    ready?: (host: ProviderHost) => boolean,
  ): Promise<void>;
}

/** pol back with its host check unmet. */
export const hostUnmet = (pol: ProviderHost): boolean => pol.hostCheck()?.status === "unmet";

/** pol back with its one device. */
export const oneDevice = (pol: ProviderHost): boolean => pol.devices.length === 1;

/**
 * Starts the rig (its temporary folder named `prefix`...) with pol listing `inventory` first,
 * runs `fn` on it and closes the fixture whatever `fn` does.
 */
export async function withHostUnmetRig(
  prefix: string,
  inventory: Inventory,
  safety: NonNullable<TestConfigOptions["safety"]>,
  fn: (rig: HostUnmetRig) => Promise<void>,
): Promise<void> {
  const dir = tempDir(prefix);
  const file = `${dir}/pol.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const fx = await startHttpFixture({
    config: {
      providers: [
        programmableProvider("pol", file, {
          restart: { maxAttempts: 5, backoffMs: [0, 0, 0, 0, 0] },
        }),
      ],
      safety,
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    await fn({
      rt: fx.runtime,
      api,
      file,
      async restartAs(host, next, what, ready = () => true) {
        await Deno.writeTextFile(file, JSON.stringify(next));
        const pid = host.session!.pid;
        Deno.kill(pid, "SIGKILL");
        await waitFor(
          what,
          () => host.available && host.session!.pid !== pid && ready(host),
          30_000,
        );
      },
    });
  } finally {
    await fx.close();
  }
}
