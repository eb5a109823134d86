/**
 * What the in-process incident tests share: an IncidentRecorder over a hand-fed History on a
 * ManualClock and in-memory files (tests/helpers/hand_fed_history.ts), its event bus, the two
 * triggers as the runtime publishes them, and a bounded session that stops both afterwards.
 */
import type { Logger } from "../../src/common/mod.ts";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { type IncidentOptions, IncidentRecorder } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** Where the recorder keeps its records (under the hand-fed history's /data). */
export const INCIDENTS_DIR = "/data/history/incidents";

/** An incident record's path (not the temporary file replaceWhole writes through). */
const RECORD_PATH = /\/inc-[^/]*\.jsonl$/;

/**
 * FaultyMemoryFiles (no fault unless set) holding an operation on a record while `held` is set
 * (a hung mount).
 */
export class HeldRecordFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  /** Operations that waited on `held` so far. */
  waiting = 0;
  protected async holdRecord(path: string): Promise<void> {
    if (this.held !== null && RECORD_PATH.test(path)) {
      this.waiting++;
      await this.held;
    }
  }
}

/**
 * Removals of records wait while `held` is set (not the temporary file the ids not kept are
 * replaced through: replaceWhole removes it first).
 */
export class HeldRemovals extends HeldRecordFiles {
  override async remove(path: string): Promise<void> {
    await this.holdRecord(path);
    return await super.remove(path);
  }
}

/** Appends to a record (its write under way) wait while `held` is set, then fail when full. */
export class HeldRecordAppends extends HeldRecordFiles {
  override async openAppend(path: string): ReturnType<FaultyMemoryFiles["openAppend"]> {
    const handle = await super.openAppend(path);
    return {
      ...handle,
      append: async (text: string) => {
        await this.holdRecord(path);
        return await handle.append(text);
      },
    };
  }
}

/** Openings of a record wait while `held` is set. */
export class HeldRecords extends HeldRecordFiles {
  override async openAppend(path: string) {
    await this.holdRecord(path);
    return await super.openAppend(path);
  }
}

/**
 * Alarm `hot` raising on `signal` (`provider/device/signal`: MAJOR, over its hi limit 80, no
 * action; `message` "too hot" unless given), dated `timestampMs`, as the alarm engine publishes
 * it: an incident trigger.
 */
export function hotRaised(signal: string, timestampMs: number, message = "too hot"): RuntimeEvent {
  return {
    kind: "alarm",
    alarm_id: "hot",
    transition: "raise",
    state: "active",
    level: "MAJOR",
    cause: "hi",
    limit: 80,
    signal,
    value: null,
    quality: null,
    action: "none",
    message,
    shelved_until_epoch_ms: null,
    timestamp_ms: timestampMs,
  };
}

export interface IncidentRigOptions {
  /** The recorder's history section, over testConfig's with a 1 s window before and after. */
  readonly config?: Partial<HistoryConfig>;
  /** The hand-fed History's own history section overrides (default: no disk tier). */
  readonly history?: Partial<HistoryConfig>;
  /** The files both write (default a fresh MemoryFiles): a restart passes the last boot's. */
  readonly files?: MemoryFiles;
  readonly log?: Logger;
  /** The inventory the recorder takes declared units from (default none: records keep no units). */
  readonly inventory?: IncidentOptions["inventory"];
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
    ...(o.inventory ? { inventory: o.inventory } : {}),
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
