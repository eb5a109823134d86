/** The device handles and calls a tree names literally: what the AUTO gates check before it runs. */
import assert from "node:assert/strict";
import {
  literalDeviceCalls,
  literalDeviceHandles,
  parseBehaviorTree,
} from "../../../src/automation/bt/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

function parsed(body: string) {
  const path = "/bt/main.xml";
  const { parsed } = parseBehaviorTree(path, memFiles({ [path]: xmlRoot(body) }));
  assert.ok(parsed, "the tree parses");
  return parsed;
}

const TREE = `<BehaviorTree ID="main">
  <Sequence>
    <ReadSignal device_handle=" sim0/tempctl0 " signal_id="tc1_temp" value="{t}" />
    <ReadSignal device_handle="{dev}" signal_id="x" value="{x}" />
    <ReadSignal device_handle="  " signal_id="y" value="{y}" />
    <ReadSignal device_handle="=" signal_id="z" value="{z}" />
    <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{}' />
    <CallDevice device_handle="sim0/motorctl0" function_name=" set_motor_duty" args='json:{}' />
    <CallDevice device_handle="sim0/relayio0" function_name="{fn}" args='json:{}' />
    <CallDevice device_handle="sim0/relayio0" function_name="=" args='json:{}' />
    <CallDevice device_handle="sim0/relayio0" function_name="  " args='json:{}' />
    <CallDevice device_handle="sim0/tempctl0" function_name="set_mode" args='json:{}' />
  </Sequence>
</BehaviorTree>`;

Deno.test("literalDeviceHandles: trimmed, in document order, without repeats; references (`{key}`, `=`) and blank values left out", () => {
  assert.deepEqual(literalDeviceHandles(parsed(TREE)), [
    "sim0/tempctl0",
    "sim0/motorctl0",
    "sim0/relayio0",
  ]);
});

Deno.test("literalDeviceCalls: CallDevice nodes whose device and function are both literal, trimmed, without repeats, with their args and place", () => {
  const at = (line: number) => `/bt/main.xml:${line}:5`;
  assert.deepEqual(literalDeviceCalls(parsed(TREE)), [
    { deviceHandle: "sim0/motorctl0", functionName: "set_motor_duty", args: "json:{}", at: at(8) },
    { deviceHandle: "sim0/tempctl0", functionName: "set_mode", args: "json:{}", at: at(13) },
  ]);
  // Other args are another call; args from the blackboard are null, absent ones `{}`.
  const calls = literalDeviceCalls(parsed(`<BehaviorTree ID="main">
  <Sequence>
    <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{}' />
    <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{"duty": 2}' />
    <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="{a}" />
    <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" />
  </Sequence>
</BehaviorTree>`));
  assert.deepEqual(calls.map((c) => [c.args, c.at]), [
    ["json:{}", at(4)],
    ['json:{"duty": 2}', at(5)],
    [null, at(6)],
    ["{}", at(7)],
  ]);
});
