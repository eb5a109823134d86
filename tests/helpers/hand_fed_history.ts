/** A real History fed by hand, as the state cache feeds it: no runtime, no provider. */
import type { Logger, ValueType } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { History } from "../../src/history/mod.ts";
import type { JournalFiles } from "../../src/journal/mod.ts";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";
import { ManualClock } from "./clock.ts";
import { testLogger } from "./kernel.ts";
import { MemoryFiles } from "./memory_files.ts";
import { testConfig } from "./sim_config.ts";

/**
 * A real History fed by hand, as the cache feeds it (no runtime): `poll(p, d, v)` is a poll of
 * device `p/d` at the clock's wall time with its one signal `x` = `v` (`pollSignals` one with a
 * list of signals); `known` the devices the
 * cache has; `declaredTypes` the types it declares (`p/d/signal` -> type; none: null);
 * `undeclared` the signals it does not hold (`p/d/signal`: declaredType undefined, as the cache's
 * for a device no provider lists); `declaredUnits` the units it declares (`p/d/signal` -> unit;
 * none: "");
 * `feed(dev)` any other poll. The disk tier writes to `files` under `<dataDir>/history`
 * (another History's, for a restart); `log` takes its log lines; `dataDir` is runtime.data_dir
 * (a real folder, with real files).
 */
export function handFedHistory<F extends JournalFiles = MemoryFiles>(
  o: Partial<Config["history"]> = {},
  files: F = new MemoryFiles() as JournalFiles as F,
  log: Logger = testLogger(),
  dataDir = "/data",
) {
  const clock = new ManualClock();
  const config = testConfig();
  const known = new Set<string>();
  const declaredTypes = new Map<string, ValueType>();
  const undeclared = new Set<string>();
  const declaredUnits = new Map<string, string>();
  let polled: ((d: DeviceState) => void) | null = null;
  const history = new History({
    config: { ...config.history, memoryMaxBytes: 1 << 20, ...o },
    dataDir,
    files,
    clock,
    log,
    cache: {
      onDevicePolled(l) {
        polled = l;
        return () => (polled = null);
      },
      device: (p, d) => (known.has(`${p}/${d}`) ? ({} as DeviceState) : undefined),
      qualityNow: (_p, _d, _s, s) => s.quality,
      // No bound: no sample is read stale by its age (qualityNow gives the stored quality).
      staleAfterMs: () => Infinity,
      boundsVersion: 0,
      declaredType: (p, d, s) =>
        undeclared.has(`${p}/${d}/${s}`) ? undefined : declaredTypes.get(`${p}/${d}/${s}`) ?? null,
      declaredUnit: (p, d, s) => declaredUnits.get(`${p}/${d}/${s}`) ?? "",
    },
  });
  const devices = new Map<string, DeviceState>();
  /** A poll of `dev` as the cache reports it (the device becomes one the cache has). */
  const feed = (dev: DeviceState) => {
    known.add(`${dev.providerId}/${dev.deviceId}`);
    polled!(dev);
  };
  const poll = (p: string, d: string, v: number) => {
    let dev = devices.get(`${p}/${d}`);
    if (dev === undefined) {
      dev = {
        providerId: p,
        deviceId: d,
        pollable: ["x"],
        signals: new Map<string, SignalState>(),
        lastPollMs: 0,
        lastPollMono: 0,
        available: true,
      };
      devices.set(`${p}/${d}`, dev);
    }
    (dev.signals as Map<string, SignalState>).set("x", {
      value: { type: "double", double: v },
      quality: "OK",
      timestampMs: clock.wall,
      receivedMono: clock.mono,
    });
    feed(dev);
  };
  /**
   * A poll of device `p/d` declaring `pollable` (a rediscovery is a poll with another list), each
   * signal a double `v` at the clock's time.
   */
  const pollSignals = (pollable: string[], v: number, p = "p", d = "d") => {
    const signals = new Map<string, SignalState>();
    for (const id of pollable) {
      signals.set(id, {
        value: { type: "double", double: v },
        quality: "OK",
        timestampMs: clock.wall,
        receivedMono: clock.mono,
      });
    }
    feed({
      providerId: p,
      deviceId: d,
      pollable,
      signals,
      lastPollMs: clock.wall,
      lastPollMono: clock.mono,
      available: true,
    });
  };
  /** Whether the History follows the cache's polls now (subscribed, not yet unsubscribed). */
  const following = () => polled !== null;
  return {
    clock,
    history,
    known,
    declaredTypes,
    undeclared,
    declaredUnits,
    poll,
    pollSignals,
    feed,
    files,
    following,
  };
}
