/**
 * Commands from the broker (issue 38, slice 4): off by default; with `sparkplug.commands: true` a
 * DCMD writing `Functions/<name>` is an ordinary routed call (origin sparkplug) through every gate
 * -- refused in IDLE and while the e-stop is latched, carried out in MANUAL -- each one on the
 * audit trail, the outcome published back; NCMD may trigger the e-stop but never clear it.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { afterPolls, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import {
  commandResultAlias,
  nodeAnswers,
  setSimRelay,
  type SparkplugHost,
  sparkplugHost,
} from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";
import type { Config } from "../../src/config/mod.ts";

const GROUP = "lab";
const NODE = "rig-cmd";
const relay = sparkplugDeviceId("sim0", "relayio0");
const DCMD = `spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`;
const NCMD = `spBv1.0/${GROUP}/NCMD/${NODE}`;

function config(url: string, sparkplug: Partial<Config["sparkplug"]>): Config {
  return testConfig({
    runtime: { name: NODE },
    providers: [simProvider("sim0")],
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, ...sparkplug },
  });
}

/** Writes relay 3 over DCMD and waits for the answer published back (its String value). */
async function writeRelay(
  host: SparkplugHost,
  alias: number,
  on: boolean,
): Promise<string> {
  const before = host.messages.length;
  await host.send(DCMD, [{ name: "Functions/set_relay_ch3", datatype: 11, boolean_value: on }]);
  const answer = await waitFor(
    "the command's answer",
    () =>
      host.messages.slice(before).flatMap((m) =>
        m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` ? m.payload.metrics ?? [] : []
      ).find((x) => x.alias === alias && typeof x.string_value === "string"),
  );
  return answer.string_value as string;
}

function auditOf(rt: Kernel): AuditEntry[] {
  const entries: AuditEntry[] = [];
  rt.audit.onEntry((e) => entries.push(e));
  return entries;
}

Deno.test({
  name:
    "DCMD is refused in IDLE and while latched, carried out in MANUAL, each audited with origin sparkplug",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true }));
      const entries = auditOf(rt);
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const fnAlias = (birth.payload.metrics ?? []).find((m) =>
        m.name === "Functions/set_relay_ch3"
      )!.alias as number;
      const nbirth = host.messages.find((m) => m.topic.includes("/NBIRTH/"))!;
      assert.ok(
        (nbirth.payload.metrics ?? []).some((m) => m.name === "Node Control/E-Stop"),
        "with commands on, the NBIRTH offers the e-stop",
      );

      // IDLE: the mode gate refuses.
      const idle = await writeRelay(host, fnAlias, true);
      assert.match(idle, /^REFUSED: .*IDLE/);
      assert.equal(rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value?.type, "bool");

      // MANUAL: carried out; the relay changes.
      await rt.modes.request("MANUAL");
      assert.equal(await writeRelay(host, fnAlias, true), "OK");
      await waitFor("relay 3 on", () => {
        const v = rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool;
      });

      // Latched: the e-stop gate refuses (and FAULT with it).
      await rt.estop.trigger("test");
      const latched = await writeRelay(host, fnAlias, false);
      assert.match(latched, /^REFUSED: /);

      rt.audit.flushOpen();
      const sparkplugCalls = entries.filter((e) =>
        e.origin.kind === "sparkplug" && e.action === "call"
      );
      assert.deepEqual(
        sparkplugCalls.map((e) => [e.outcome, e.mode, e.function, e.origin.cause]),
        [
          ["refused", "IDLE", "set_relay_ch3", "DCMD"],
          ["accepted", "MANUAL", "set_relay_ch3", "DCMD"],
          ["refused", "FAULT", "set_relay_ch3", "DCMD"],
        ],
      );
      assert.equal(rt.sparkplug!.counts.commandsAccepted, 1);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "NCMD triggers the e-stop with commands on, and never clears it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true }), { arm: true });
      await waitFor("NBIRTH", () => host.messages.find((m) => m.topic.includes("/NBIRTH/")));
      await host.send(NCMD, [{ name: "Node Control/E-Stop", datatype: 11, boolean_value: true }]);
      await waitFor("the latch", () => rt!.estop.latched);
      await waitFor(
        "NDATA Runtime/Estop Latched true",
        () =>
          host.messages.find((m) =>
            m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}` &&
            (m.payload.metrics ?? []).some((x) => x.boolean_value === true)
          ),
      );
      // Answered once latched (the kernel's port reports the latch), not after the ladder.
      await waitFor(
        "NDATA Runtime/Command Result: Node Control/E-Stop: OK",
        () =>
          host.messages.find((m) =>
            m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}` &&
            (m.payload.metrics ?? []).some((x) => x.string_value === "Node Control/E-Stop: OK")
          ),
      );
      const refused = rt.sparkplug!.counts.commandsRefused;
      await host.send(NCMD, [{
        name: "Node Control/Clear E-Stop",
        datatype: 11,
        boolean_value: true,
      }]);
      await waitFor(
        "the clear to be refused",
        () => rt!.sparkplug!.counts.commandsRefused > refused,
      );
      assert.equal(rt.estop.latched, true, "nothing over Sparkplug clears the latch");
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "commands are off by default: DCMD and the NCMD e-stop are refused before any gate",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, {}), { arm: true });
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const fnAlias = (birth.payload.metrics ?? []).find((m) =>
        m.name === "Functions/set_relay_ch3"
      )!.alias as number;
      assert.equal(
        await writeRelay(host, fnAlias, true),
        "REFUSED: commands are off (sparkplug.commands: false)",
      );
      await host.send(NCMD, [{ name: "Node Control/E-Stop", datatype: 11, boolean_value: true }]);
      await waitFor("the e-stop to be refused", () => rt!.sparkplug!.counts.commandsRefused >= 2);
      assert.equal(rt.estop.latched, false);
      const v = rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
      assert.ok(v?.type === "bool" && v.bool === false, "the relay did not move");
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a retained DCMD is acted on only when it arrives live: after a reconnect the broker's stale copy moves nothing",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: 100 });
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true }));
      await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      await rt.modes.request("MANUAL");
      const relayOn = () => {
        const v = rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool;
      };
      // A host that (against Sparkplug) publishes its command retained: live, it is a command.
      await host.send(DCMD, [{
        name: "Functions/set_relay_ch3",
        datatype: 11,
        boolean_value: true,
      }], {
        retain: true,
      });
      await waitFor("relay 3 on", relayOn);
      // The operator turns it off; then the connection drops and comes back.
      await setSimRelay(rt, false);
      await waitFor("relay 3 off", () => !relayOn());
      const accepted = rt.sparkplug!.counts.commandsAccepted;
      const ignored = rt.sparkplug!.counts.commandsIgnored;
      const connects = rt.sparkplug!.counts.connects;
      await broker.pause(); // SIGTERM: the retained message is saved
      await broker.resume();
      await waitFor("the node reconnected", () => rt!.sparkplug!.counts.connects > connects);
      // The broker hands the stale copy to the new subscription (retain flag set): ignored
      // (tests/sparkplug/retained_command_test.ts).
      await waitFor("the stale command ignored", () => {
        return rt!.sparkplug!.counts.commandsIgnored > ignored;
      });
      // Two polls of the relay since: a call the stale copy had made would show in them.
      await afterPolls(rt, "sim0/relayio0", 2);
      assert.equal(relayOn(), false, "the stale command did not move the relay");
      assert.equal(rt.sparkplug!.counts.commandsAccepted, accepted);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "with role viewer the NBIRTH offers no Node Control/E-Stop: every command is refused, that one too",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true, role: "viewer" }), {
        arm: true,
      });
      const nbirth = await waitFor(
        "NBIRTH",
        () => host.messages.find((m) => m.topic.includes("/NBIRTH/")),
      );
      const offered = (nbirth.payload.metrics ?? []).map((m) => m.name);
      await host.send(NCMD, [{ name: "Node Control/E-Stop", datatype: 11, boolean_value: true }]);
      await waitFor("the e-stop refused", () => rt!.sparkplug!.counts.commandsRefused >= 1);
      assert.equal(rt.estop.latched, false, "role viewer: the NCMD e-stop is refused");
      assert.ok(
        !offered.includes("Node Control/E-Stop"),
        `the NBIRTH offers a control the node refuses: ${JSON.stringify(offered)}`,
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a refused NCMD is answered as a DCMD is: NDATA of Runtime/Command Result names the metric and why",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, {}), { arm: true });
      const nbirth = await waitFor(
        "NBIRTH",
        () => host.messages.find((m) => m.topic.includes("/NBIRTH/")),
      );
      const result = (nbirth.payload.metrics ?? []).find((m) =>
        m.name === "Runtime/Command Result"
      );
      assert.ok(
        result?.datatype === 12 && result.string_value === "",
        `the NBIRTH declares no String metric for the answers to NCMD: ${
          JSON.stringify((nbirth.payload.metrics ?? []).map((m) => m.name))
        }`,
      );
      const answer = async (metrics: Array<Record<string, unknown>>) => {
        const before = host.messages.length;
        await host.send(NCMD, metrics);
        const m = await waitFor(
          "the NCMD's answer",
          () =>
            host.messages.slice(before).flatMap((m) =>
              m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}` ? m.payload.metrics ?? [] : []
            ).find((x) => x.alias === result.alias),
        );
        return String(m.string_value);
      };
      assert.equal(
        await answer([{ name: "Node Control/E-Stop", datatype: 11, boolean_value: true }]),
        "Node Control/E-Stop: REFUSED: commands are off (sparkplug.commands: false)",
      );
      assert.equal(rt.estop.latched, false);
      // The control set back to false (a momentary button) is no command: ignored, not answered.
      const ignored = rt.sparkplug!.counts.commandsIgnored;
      await host.send(NCMD, [{ name: "Node Control/E-Stop", datatype: 11, boolean_value: false }]);
      await waitFor("ignored", () => rt!.sparkplug!.counts.commandsIgnored === ignored + 1);
      assert.match(
        await answer([{ name: "Node Control/Reboot", datatype: 11, boolean_value: true }]),
        /^Node Control\/Reboot: REFUSED: not a node command of this runtime/,
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a DCMD writing a signal is refused without a DDATA of a String on the signal's alias; the node answers it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true }));
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const signal = (birth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")!;
      assert.equal(signal.datatype, 11, "a Boolean signal");
      const alias = await commandResultAlias(host, GROUP, NODE);
      const before = host.messages.length;
      const refused = rt.sparkplug!.counts.commandsRefused;
      for (const name of ["relay_ch3_state", "Functions/no_such_thing"]) {
        await host.send(DCMD, [{ name, datatype: 11, boolean_value: true }]);
      }
      await waitFor("both refused", () => rt!.sparkplug!.counts.commandsRefused === refused + 2);
      const answers = await nodeAnswers(
        host,
        { group: GROUP, node: NODE, alias, from: before, count: 2 },
        3000,
      );
      const born = new Set((birth.payload.metrics ?? []).map((m) => m.alias));
      const ddata = host.messages.slice(before).filter((m) =>
        m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`
      ).flatMap((m) => m.payload.metrics ?? []);
      assert.deepEqual(
        ddata.filter((x) => typeof x.string_value === "string").map((x) => [
          x.alias === signal.alias
            ? "relay_ch3_state (a Boolean)"
            : born.has(x.alias)
            ? x.alias
            : "an alias no birth declared",
          x.string_value,
        ]),
        [],
        "answers published on metrics that are no function of the device",
      );
      assert.deepEqual(answers, [
        `${relay}/relay_ch3_state: REFUSED: signals are read-only; write a Functions/<name> metric`,
        `${relay}/Functions/no_such_thing: REFUSED: no such function`,
      ]);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a DCMD to a device this node does not have is answered by the node (Runtime/Command Result), not only logged",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { commands: true }));
      const resultAlias = await commandResultAlias(host, GROUP, NODE);
      await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const gone = sparkplugDeviceId("sim0", "no_such_device");
      const before = host.messages.length;
      const refused = rt.sparkplug!.counts.commandsRefused;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${gone}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      // By alias too: an alias of another device names nothing on this one.
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${gone}`, [
        { alias: resultAlias, datatype: 11, boolean_value: true },
      ]);
      await waitFor("both refused", () => rt!.sparkplug!.counts.commandsRefused === refused + 2);
      const answers = await nodeAnswers(
        host,
        { group: GROUP, node: NODE, alias: resultAlias, from: before, count: 2 },
        3000,
      );
      assert.deepEqual(answers, [
        `${gone}/Functions/set_relay_ch3: REFUSED: no such device on this node`,
        `${gone}/alias ${resultAlias}: REFUSED: no such device on this node`,
      ], "a DCMD to an unknown device is unanswered");
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
