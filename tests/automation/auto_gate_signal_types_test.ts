/**
 * The AUTO gate and the signals a tree's ReadSignal nodes write: two nodes reading a string and a
 * number signal into one blackboard entry (a scratch key reused), or a signal read into an entry
 * another port declares with the other kind, fault the runtime at the first tick that writes the
 * second kind (docs/automation.md, "Blackboard types"). Verify cannot see it (it does not know the
 * signals' types); the gate does, from the devices' declared signals, and refuses AUTO instead.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { withTree } from "./_kernel_rig.ts";

const READ = (signal: string, value: string) =>
  `<ReadSignal device_handle="sim0/analogsensor0" signal_id="${signal}" value="${value}" />`;

Deno.test("AUTO is refused when one blackboard entry is written by ReadSignals of a string and of a number signal", async () => {
  await withTree(
    `<Sequence>${READ("voltage_ch1", "{x}")}${READ("sensor_quality", "{x}")}</Sequence>`,
    async (rt) => {
      await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.match(
          e.message,
          /^refusing AUTO: the behavior tree writes blackboard entry "x" with ReadSignal sim0\/analogsensor0 voltage_ch1 \(a double signal\) at .*tree\.xml:\d+:\d+ and with ReadSignal sim0\/analogsensor0 sensor_quality \(a string signal\) at .*tree\.xml:\d+:\d+/,
        );
        return true;
      });
      assert.equal(rt.modes.current(), "MANUAL");
    },
    { arm: true },
  );
});

Deno.test("AUTO is refused when a ReadSignal writes a string signal into an entry another node writes as a number", async () => {
  await withTree(
    `<Sequence><GetParameter param="target_temp" value="{q}" />${
      READ("sensor_quality", "{q}")
    }</Sequence>`,
    async (rt) => {
      await assert.rejects(
        rt.modes.request("AUTO"),
        /refusing AUTO: the behavior tree writes blackboard entry "q" with GetParameter \(double\) at .*tree\.xml:\d+:\d+ and with ReadSignal sim0\/analogsensor0 sensor_quality \(a string signal\) at /,
      );
      assert.equal(rt.modes.current(), "MANUAL");
    },
    { arm: true },
  );
});

Deno.test("AUTO is refused when a ReadSignal writes a number signal into an entry a string input port declared", async () => {
  // EmitOnChangeOrInterval's `key` (a string port) comes first: the entry is a string entry, and
  // the ReadSignal's first value faulted the runtime at the first tick.
  await withTree(
    `<Sequence><Script code="x := 'none'" /><EmitOnChangeOrInterval key="{x}" emit="{e}" />${
      READ("voltage_ch1", "{x}")
    }</Sequence>`,
    async (rt) => {
      await assert.rejects(
        rt.modes.request("AUTO"),
        /refusing AUTO: the behavior tree writes blackboard entry "x" with EmitOnChangeOrInterval key \(declares it string\) at .*tree\.xml:\d+:\d+ and with ReadSignal sim0\/analogsensor0 voltage_ch1 \(a double signal\) at /,
      );
      assert.equal(rt.modes.current(), "MANUAL");
    },
    { arm: true },
  );
});

Deno.test("AUTO is admitted when a ReadSignal declares the entry a string input port reads after it", async () => {
  // The ReadSignal comes first: the entry takes the signal's type, and the string port reads it
  // converted (as any typed port reads an entry).
  await withTree(
    `<Sequence>${READ("voltage_ch1", "{x}")}<EmitOnChangeOrInterval key="{x}" emit="{e}" />` +
      `</Sequence>`,
    async (rt) => {
      await rt.modes.request("AUTO");
      assert.equal(rt.modes.current(), "AUTO");
    },
    { arm: true },
  );
});

Deno.test("AUTO is admitted when ReadSignals of one kind share an entry, and when string and number signals use entries of their own", async () => {
  await withTree(
    `<Sequence>${READ("voltage_ch1", "{x}")}${READ("voltage_ch2", "{x}")}${
      READ("sensor_quality", "{s}")
    }</Sequence>`,
    async (rt) => {
      await rt.modes.request("AUTO");
      assert.equal(rt.modes.current(), "AUTO");
    },
    { arm: true },
  );
});

Deno.test("AUTO is refused when a double signal is read into an entry CheckBool reads as bool, or Sleep as int64", async () => {
  // ReadSignal writes the double (0.73 V); CheckBool's bool and Sleep's int64 cannot convert it,
  // so the read failed at every tick (Sleep's threw, faulting the runtime). Before: only string
  // against number was compared, and both passed.
  for (
    const [reader, type] of [
      [`<CheckBool value="{x}" />`, "CheckBool value \\(reads it as bool\\)"],
      [`<Sleep msec="{x}" />`, "Sleep msec \\(reads it as int64\\)"],
    ] as const
  ) {
    await withTree(
      `<Sequence>${READ("voltage_ch1", "{x}")}${reader}</Sequence>`,
      async (rt) => {
        await assert.rejects(
          rt.modes.request("AUTO"),
          new RegExp(
            `refusing AUTO: the behavior tree writes blackboard entry "x" with ReadSignal ` +
              `sim0/analogsensor0 voltage_ch1 \\(a double signal\\) at .*tree\\.xml:\\d+:\\d+ and ` +
              `with ${type} at .*tree\\.xml:\\d+:\\d+`,
          ),
        );
        assert.equal(rt.modes.current(), "MANUAL");
      },
      { arm: true },
    );
  }
});

Deno.test("AUTO is refused when a double signal is read into an entry CheckBool declared bool before it", async () => {
  await withTree(
    `<Sequence><ForceSuccess><CheckBool value="{x}" /></ForceSuccess>${
      READ("voltage_ch1", "{x}")
    }</Sequence>`,
    async (rt) => {
      await assert.rejects(
        rt.modes.request("AUTO"),
        /refusing AUTO: the behavior tree writes blackboard entry "x" with CheckBool value \(declares it bool\) at .*tree\.xml:\d+:\d+ and with ReadSignal sim0\/analogsensor0 voltage_ch1 \(a double signal\) at /,
      );
      assert.equal(rt.modes.current(), "MANUAL");
    },
    { arm: true },
  );
});

Deno.test("AUTO is admitted when a bool signal is read by CheckBool and a double signal by a double port", async () => {
  await withTree(
    `<Sequence>` +
      `<ReadSignal device_handle="sim0/tempctl0" signal_id="relay1_state" value="{r}" />` +
      `<ForceSuccess><CheckBool value="{r}" expected="false" /></ForceSuccess>` +
      `${READ("voltage_ch1", "{v}")}` +
      `<BuildArgsJson arg1_name="v" arg1_type="double" arg1_num="{v}" json="{j}" />` +
      `</Sequence>`,
    async (rt) => {
      await rt.modes.request("AUTO");
      assert.equal(rt.modes.current(), "AUTO");
    },
    { arm: true },
  );
});
