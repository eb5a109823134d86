/**
 * What the in-process incident tests share: an IncidentRecorder over a hand-fed History on a
 * ManualClock and in-memory files (tests/helpers/hand_fed_history.ts), its event bus, the two
 * triggers as the runtime publishes them, and a bounded session that stops both afterwards.
 */
import type { Logger } from "../../src/common/mod.ts";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { IncidentRecorder } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** Where the recorder keeps its records (under the hand-fed history's /data). */
export const INCIDENTS_DIR = "/data/history/incidents";

export interface IncidentRigOptions {
  /** The recorder's history section, over testConfig's with a 1 s window before and after. */
  readonly config?: Partial<HistoryConfig>;
  /** The hand-fed History's own history section overrides (default: no disk tier). */
  readonly history?: Partial<HistoryConfig>;
  /** The files both write (default a fresh MemoryFiles): a restart passes the last boot's. */
  readonly files?: MemoryFiles;
  readonly log?: Logger;
}

export function incidentRig(o: IncidentRigOptions = {}) {
  const fed = handFedHistory({ diskMaxBytes: 0, ...o.history }, o.files);
  const { clock, history, files } = fed;
  const config = { ...testConfig().history, incidentBeforeS: 1, incidentAfterS: 1, ...o.config };
  const bus = new EventBus();
  const incidents = new IncidentRecorder({
    config,
    history,
    files,
    dir: INCIDENTS_DIR,
    clock,
    log: o.log ?? testLogger(),
  });
  /** The device's loss, as the cache publishes it (an incident trigger). */
  const loss = (device: string, provider = "p0") =>
    bus.publish({
      kind: "device_availability",
      provider_id: provider,
      device_id: device,
      available: false,
      timestamp_ms: clock.nowMs(),
    });
  /** An HTTP e-stop latching (an incident trigger), its reason not given. */
  const estop = () =>
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: null,
      cause: "api",
      timestamp_ms: clock.nowMs(),
    });
  const start = async () => {
    await history.start();
    await incidents.start(bus);
  };
  const stop = async () => {
    await incidents.stop();
    await history.stop();
  };
  /** Starts the history and the recorder, runs `fn`, and stops both whatever `fn` did. */
  const session = async (fn: () => Promise<void>) => {
    await start();
    try {
      await fn();
    } finally {
      await stop();
    }
  };
  return { ...fed, config, bus, incidents, loss, estop, start, stop, session };
}
