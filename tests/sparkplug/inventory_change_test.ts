/**
 * Sparkplug meets a provider whose inventory changes while the broker is away: a configuration
 * reload restarts the provider (its entry changed) and the new process declares a signal with
 * another value type, or in another unit. Store and forward replays the history ring's changes
 * after the births; the samples polled before the restart must neither be re-read as the signal's
 * new type (a double 2.5 as an int64 crashed the runtime) nor be sent under the alias the new birth
 * declares as the new type (nor, polled in another unit, under a birth declaring the new one: 20
 * degC read as 20 K): they are left out, counted and warned about. Against a real Mosquitto and
 * the programmable provider as a child process.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import {
  dbl,
  type Inventory,
  programmableProvider,
  Q,
  T,
} from "../helpers/programmable_provider.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { MAX_UNIT_CHANGES } from "../../src/history/mod.ts";
import {
  engUnit,
  hostBackConnect,
  infoLines,
  type Received,
  reconnectingHost,
} from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";
import type { TypedValue } from "../../src/common/mod.ts";

const GROUP = "lab";
const NODE = "rig-inv";
const DEV = sparkplugDeviceId("p0", "d0");

function config(url: string, inventoryFile: string, history: boolean): Config {
  return testConfig({
    runtime: { name: NODE },
    providers: [programmableProvider("p0", inventoryFile)],
    pollingIntervalMs: 100,
    history: { enabled: history, diskMaxBytes: 0 },
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, reconnectMs: 100 },
  });
}

/** Programs what d0's ReadSignals answers from now on (function 1 of the provider, on its host). */
async function answerWith(rt: Kernel, values: unknown[]): Promise<void> {
  await rt.registry.host("p0")!.request("call", {
    device_id: "d0",
    function_id: 1,
    args: { answer: { type: T.STRING, string_value: JSON.stringify({ read: { values } }) } },
  });
}

const isHistorical = (m: Received) =>
  (m.payload.metrics ?? []).some((x) => x.is_historical === true);

/** What one outage across a reload restarting p0 leaves (acrossRestart). */
interface AcrossRestart {
  readonly rt: Kernel;
  readonly host: Awaited<ReturnType<typeof reconnectingHost>>;
  readonly lines: string[];
  /** d0's first DBIRTH. */
  readonly birth: Received;
  /** host.messages' length when the broker came back. */
  readonly marker: number;
  /** storeDropped when the broker came back. */
  readonly droppedBefore: number;
  /** The `is_historical` DDATA of d0 the host got after the broker came back. */
  readonly replayed: Received[];
}

/**
 * The rig both tests share: p0 declaring `before`, the broker paused, x polled as `polled` during
 * the outage, a reload restarting p0 with `after` (x polled as its value, `polledAfter`), the
 * broker back and the replay finished; then `check`. Everything is stopped after.
 */
async function acrossRestart(
  o: {
    history: boolean;
    before: Inventory;
    after: Inventory;
    polled: ReturnType<typeof dbl>;
    polledAfter: (v: TypedValue | null | undefined) => boolean;
  },
  check: (x: AcrossRestart) => Promise<void>,
): Promise<void> {
  const dir = tempDir("sparkplug-inventory-");
  await Deno.writeTextFile(`${dir}/before.json`, JSON.stringify(o.before));
  await Deno.writeTextFile(`${dir}/after.json`, JSON.stringify(o.after));
  const broker = await Mosquitto.start();
  const host = await reconnectingHost(broker.url, GROUP);
  // The node's writes after the restart wait for the host to be back (hostBackConnect).
  const writes = hostBackConnect(host);
  const { lines, log } = infoLines();
  let rt: Kernel | null = null;
  try {
    rt = await startRuntime(config(broker.url, `${dir}/before.json`, o.history), {
      host: { log, mqttConnect: writes.connect },
    });
    const node = rt.sparkplug!;
    const birth = await waitFor(
      "d0's DBIRTH",
      () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${DEV}`),
    );
    await broker.pause();
    await waitFor("the edge node to see the broker gone", () => !node.online);
    writes.holdUntilHostBack();
    // A change polled during the outage: the ring (or the DDATA queue) keeps it for the replay.
    await answerWith(rt, [o.polled]);
    await waitFor(`x = ${o.polled.double} polled`, () => {
      const v = rt!.cache.signal("p0", "d0", "x")?.value;
      return v?.type === "double" && v.double === o.polled.double;
    });
    if (o.history) assert.equal(node.replayPending, true);
    else assert.ok(node.stored.messages > 0, "the DDATA of the outage queued");
    // The reload restarts p0 (its entry changed): the new process declares `after`.
    const report = await rt.reload(config(broker.url, `${dir}/after.json`, o.history));
    assert.deepEqual(report.providers.restarted, ["p0"]);
    await waitFor("x polled from the new process", () => {
      return o.polledAfter(rt!.cache.signal("p0", "d0", "x")?.value);
    });
    const marker = host.messages.length;
    const droppedBefore = node.counts.storeDropped;
    await broker.resume();
    await waitFor(
      "the replay to finish",
      () => node.online && !node.replayPending && node.stored.messages === 0,
      20000,
    );
    const replayed = await waitFor("the replayed DDATA of d0 at the host", () => {
      const r = host.messages.slice(marker).filter((m) =>
        m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${DEV}` && isHistorical(m)
      );
      return r.length > 0 ? r : null;
    });
    await check({ rt, host, lines, birth, marker, droppedBefore, replayed });
  } finally {
    await rt?.stop();
    await host.close();
    await broker.dispose();
  }
}

for (const history of [true, false]) {
  Deno.test({
    name:
      "a reload that restarts a provider with a signal of another type during a broker outage: the replay leaves out (and counts) the samples of the old type, sends those of the new, and the runtime goes on " +
      (history ? "(the history ring as the buffer)" : "(history off: the DDATA queue)"),
    ignore: mosquittoMissing(),
    async fn() {
      await acrossRestart({
        history,
        before: {
          devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1.5)] } },
        },
        after: {
          devices: {
            d0: {
              signals: [{ id: "x", type: T.INT64 }],
              values: [{ id: "x", type: T.INT64, int64: "7", quality: Q.OK }],
            },
          },
        },
        polled: dbl("x", 2.5),
        polledAfter: (v) => v?.type === "int64" && Number(v.int64) === 7,
      }, async ({ rt, host, lines, birth, marker, droppedBefore, replayed }) => {
        const node = rt.sparkplug!;
        const alias = (birth.payload.metrics ?? []).find((m) => m.name === "x")!.alias;
        const xs = replayed.flatMap((m) =>
          (m.payload.metrics ?? []).filter((x) => Number(x.alias) === Number(alias))
        );
        // The new birth declares x Int64: 7 (polled after the restart) replays, 2.5 (a double
        // polled before it) does not, neither as a double under that alias nor as an int64.
        const shown = JSON.stringify(xs, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
        assert.ok(xs.some((x) => Number(x.long_value) === 7), `x = 7 replayed: ${shown}`);
        assert.ok(xs.every((x) => x.double_value === undefined), `no double replayed: ${shown}`);
        assert.equal(xs.length, 1, shown);
        assert.equal(node.counts.storeDropped, droppedBefore + 1);
        assert.ok(
          lines.some((l) =>
            // With history, the retype started x's ring afresh, trimmed (the old type's polls
            // dropped there): the replay says the loss as a gap of the ring. Without, the DDATA
            // queue still holds them and they are left out as mistyped.
            (history
              ? /^WARN .* the history ring no longer reaches back to the outage start: 1 device/
              : /^WARN .* polled as another type than its signals' birth declares now/).test(l)
          ),
          lines.filter((l) => /sparkplug/.test(l)).join("\n"),
        );
        // The edge node goes on: live data after the replay.
        await answerWith(rt, [{ id: "x", type: T.INT64, int64: "8", quality: Q.OK }]);
        await waitFor(
          "x = 8 live",
          () =>
            host.messages.slice(marker).some((m) =>
              m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${DEV}` && !isHistorical(m) &&
              (m.payload.metrics ?? []).some((x) =>
                Number(x.alias) === Number(alias) && Number(x.long_value) === 8
              )
            ),
        );
      });
    },
  });
}

for (const history of [true, false]) {
  Deno.test({
    name:
      "a reload that restarts a provider with a signal of another unit during a broker outage: the replay leaves out (and counts) the samples polled in the old unit, sends those of the new " +
      (history ? "(the history ring as the buffer)" : "(history off: the DDATA queue)"),
    ignore: mosquittoMissing(),
    async fn() {
      // The same type (double), another unit: 20 degC is no 20 K.
      await acrossRestart({
        history,
        before: {
          devices: {
            d0: { signals: [{ id: "x", type: T.DOUBLE, unit: "degC" }], values: [dbl("x", 1.5)] },
          },
        },
        after: {
          devices: {
            d0: { signals: [{ id: "x", type: T.DOUBLE, unit: "K" }], values: [dbl("x", 293.15)] },
          },
        },
        polled: dbl("x", 20),
        polledAfter: (v) => v?.type === "double" && v.double === 293.15,
      }, async ({ rt, host, lines, birth, marker, droppedBefore, replayed }) => {
        const node = rt.sparkplug!;
        assert.equal(engUnit((birth.payload.metrics ?? []).find((m) => m.name === "x")!), "degC");
        const reborn = await waitFor(
          "d0's DBIRTH again",
          () =>
            host.messages.slice(marker).find((m) =>
              m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${DEV}`
            ),
        );
        const x = (reborn.payload.metrics ?? []).find((m) => m.name === "x")!;
        assert.equal(engUnit(x), "K", "the new DBIRTH declares x in K");
        // 293.15 (polled in K) replays; 20 (polled in degC) does not: under the alias the new
        // birth declares in K, a host would store it as 20 K.
        const values = replayed.flatMap((m) =>
          (m.payload.metrics ?? []).filter((v) => Number(v.alias) === Number(x.alias))
        ).filter((v) => v.double_value !== undefined).map((v) => v.double_value);
        assert.deepEqual(values, [293.15]);
        assert.equal(node.counts.storeDropped, droppedBefore + 1);
        assert.ok(
          lines.some((l) =>
            /^WARN .* polled in another unit than its signals' birth declares now/.test(l)
          ),
          lines.filter((l) => /sparkplug/.test(l)).join("\n"),
        );
      });
    },
  });
}

/**
 * The ring remembers MAX_UNIT_CHANGES unit changes per signal: a sample polled before the oldest
 * it remembers is of no known unit, and left out of the replay as of another (docs/sparkplug.md),
 * even when its unit was the one the DBIRTH declares now (`backToFirst`: the last restart declares
 * the unit of before the outage again).
 */
for (const backToFirst of [false, true]) {
  Deno.test({
    name:
      "a provider back MAX_UNIT_CHANGES + 1 times during a broker outage, each time with another unit: the replay leaves out the samples older than the units the ring remembers (WARNed, counted) and sends the newest in the unit its DBIRTH declares" +
      (backToFirst ? " (the last unit the first again)" : ""),
    ignore: mosquittoMissing(),
    async fn() {
      const dir = tempDir("sparkplug-inventory-");
      const inUnit = (unit: string, v: number): Inventory => ({
        devices: { d0: { signals: [{ id: "x", type: T.DOUBLE, unit }], values: [dbl("x", v)] } },
      });
      const file = (i: number) => `${dir}/u${i}.json`;
      const restarts = MAX_UNIT_CHANGES + 1;
      const unit = (i: number) => (backToFirst && i === restarts ? "u0" : `u${i}`);
      for (let i = 0; i <= restarts; i++) {
        await Deno.writeTextFile(file(i), JSON.stringify(inUnit(unit(i), i)));
      }
      const broker = await Mosquitto.start();
      const host = await reconnectingHost(broker.url, GROUP);
      const writes = hostBackConnect(host);
      const { lines, log } = infoLines();
      let rt: Kernel | null = null;
      try {
        rt = await startRuntime(config(broker.url, file(0), true), {
          host: { log, mqttConnect: writes.connect },
        });
        const kernel = rt;
        const node = kernel.sparkplug!;
        await waitFor(
          "d0's DBIRTH",
          () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${DEV}`),
        );
        await broker.pause();
        await waitFor("the edge node to see the broker gone", () => !node.online);
        writes.holdUntilHostBack();
        // The outage's first sample, in u0: older than the MAX_UNIT_CHANGES changes that follow.
        await answerWith(kernel, [dbl("x", 0.5)]);
        await waitFor("x = 0.5 polled", () => {
          const v = kernel.cache.signal("p0", "d0", "x")?.value;
          return v?.type === "double" && v.double === 0.5;
        });
        assert.equal(node.replayPending, true);
        // p0 comes back (a reload restarting it) MAX_UNIT_CHANGES + 1 times, each in another unit,
        // x polled as i in u<i>.
        for (let i = 1; i <= restarts; i++) {
          const report = await kernel.reload(config(broker.url, file(i), true));
          assert.deepEqual(report.providers.restarted, ["p0"]);
          await waitFor(`x = ${i} polled in u${i}`, () => {
            const v = kernel.cache.signal("p0", "d0", "x")?.value;
            return v?.type === "double" && v.double === i;
          });
        }
        const marker = host.messages.length;
        const droppedBefore = node.counts.storeDropped;
        await broker.resume();
        await waitFor(
          "the replay to finish",
          () => node.online && !node.replayPending,
          20000,
        );
        const reborn = await waitFor(
          "d0's DBIRTH again",
          () =>
            host.messages.slice(marker).find((m) =>
              m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${DEV}`
            ),
        );
        const x = (reborn.payload.metrics ?? []).find((m) => m.name === "x")!;
        assert.equal(engUnit(x), unit(restarts), "the DBIRTH declares the last unit");
        const replayed = await waitFor("the replayed DDATA of d0 at the host", () => {
          const r = host.messages.slice(marker).filter((m) =>
            m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${DEV}` && isHistorical(m)
          );
          return r.length > 0 ? r : null;
        });
        const values = replayed.flatMap((m) =>
          (m.payload.metrics ?? []).filter((v) => Number(v.alias) === Number(x.alias))
        ).filter((v) => v.double_value !== undefined).map((v) => v.double_value);
        // Only the sample polled in the unit the DBIRTH declares: those in u1..u8 are in another
        // unit, and 0.5 (u0) is before the oldest unit change the ring remembers: its unit unknown
        // (also when the DBIRTH declares u0 again).
        assert.deepEqual(values, [restarts]);
        const warns = lines.filter((l) =>
          /^WARN .* polled in another unit than its signals' birth declares now/.test(l)
        );
        assert.equal(warns.length, 1, lines.filter((l) => /sparkplug/.test(l)).join("\n"));
        const n = Number(warns[0]!.match(/: (\d+) sample\(s\) of /)?.[1]);
        // 0.5 and 1..8 at least (a restart's quality changes carry no value and are not counted).
        assert.ok(n >= restarts, warns[0]);
        assert.equal(node.counts.storeDropped, droppedBefore + 1, "counted once for the device");
      } finally {
        await rt?.stop();
        await host.close();
        await broker.dispose();
      }
    },
  });
}
