/** The device handles and calls a tree names literally: what the AUTO gates check before it runs. */
import assert from "node:assert/strict";
import {
  literalDeviceCalls,
  literalDeviceHandles,
  loadBehaviorTree,
  parseBehaviorTree,
} from "../../../src/automation/bt/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

function parsed(body: string, main?: string) {
  const path = "/bt/main.xml";
  const { parsed } = parseBehaviorTree(path, memFiles({ [path]: xmlRoot(body, main) }));
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

Deno.test("literalDeviceHandles: as the node reads them (verify refuses spaces around), in document order, without repeats; references (`{key}`, `=`) and blank values left out", () => {
  assert.deepEqual(literalDeviceHandles(parsed(TREE)), [
    " sim0/tempctl0 ",
    "sim0/motorctl0",
    "sim0/relayio0",
    "sim0/tempctl0",
  ]);
});

Deno.test("literalDeviceCalls: CallDevice nodes whose device and function are both literal, as the node reads them, without repeats, with their args and place", () => {
  const at = (line: number) => `/bt/main.xml:${line}:5`;
  assert.deepEqual(literalDeviceCalls(parsed(TREE)), [
    { deviceHandle: "sim0/motorctl0", functionName: "set_motor_duty", args: "json:{}", at: at(8) },
    { deviceHandle: "sim0/motorctl0", functionName: " set_motor_duty", args: "json:{}", at: at(9) },
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

const SUBTREES = `<BehaviorTree ID="main">
  <Sequence>
    <SubTree ID="m" dev="sim1/motorctl0" fn="set_motor_duty" />
    <SubTree ID="outer" d="sim1/relayio0" />
    <SubTree ID="varies" dev2="sim1/tempctl0" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="m">
  <CallDevice device_handle="{dev}" function_name="{fn}" args='json:{"duty": 0.1}' />
</BehaviorTree>
<BehaviorTree ID="varies">
  <Sequence>
    <Script code="dev2 := 'sim0/x'" />
    <ReadSignal device_handle="{dev2}" signal_id="x" value="{v}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="outer">
  <SubTree ID="inner" h="{d}" />
</BehaviorTree>
<BehaviorTree ID="inner">
  <CallDevice device_handle="{h}" function_name="set_relay" />
</BehaviorTree>`;

Deno.test("literalDeviceHandles/literalDeviceCalls: a SubTree port set to a literal (through nested SubTrees) names its device; one the tree writes does not", () => {
  const p = parsed(SUBTREES, "main");
  assert.deepEqual(literalDeviceHandles(p), ["sim1/motorctl0", "sim1/relayio0"]);
  assert.deepEqual(literalDeviceCalls(p), [
    {
      deviceHandle: "sim1/motorctl0",
      functionName: "set_motor_duty",
      args: 'json:{"duty": 0.1}',
      at: "/bt/main.xml:10:3",
    },
    {
      deviceHandle: "sim1/relayio0",
      functionName: "set_relay",
      args: "{}",
      at: "/bt/main.xml:22:3",
    },
  ]);
});

const LIBRARY = `<BehaviorTree ID="main">
  <Sequence>
    <SubTree ID="used" />
    <ReadSignal device_handle="sim0/tempctl0" signal_id="t" value="{t}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="used">
  <CallDevice device_handle="sim1/motorctl0" function_name="set_motor_duty" />
</BehaviorTree>
<BehaviorTree ID="unused">
  <Sequence>
    <ReadSignal device_handle="sim9/gone0" signal_id="x" value="{x}" />
    <CallDevice device_handle="sim9/gone0" function_name="no_such_function" />
    <SubTree ID="alsoUnused" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="alsoUnused">
  <CallDevice device_handle="sim9/gone1" function_name="open" />
</BehaviorTree>`;

Deno.test("literalDeviceHandles/literalDeviceCalls: only the trees the main tree reaches through SubTree count; an unused library tree names nothing", () => {
  const p = parsed(LIBRARY, "main");
  assert.deepEqual(literalDeviceHandles(p), ["sim1/motorctl0", "sim0/tempctl0"]);
  assert.deepEqual(literalDeviceCalls(p), [
    {
      deviceHandle: "sim1/motorctl0",
      functionName: "set_motor_duty",
      args: "{}",
      at: "/bt/main.xml:9:3",
    },
  ]);
});

Deno.test("loadBehaviorTree refuses a SubTree port's literal read as a device handle that is not provider_id/device_id or has spaces around, as for one written in the node; the AUTO gate gets the handle exactly as the node reads it", () => {
  const load = (dev: string, fn = "set_relay") => {
    const path = "/bt/main.xml";
    const body = `<BehaviorTree ID="main">
  <SubTree ID="m" dev="${dev}" fn="${fn}" />
</BehaviorTree>
<BehaviorTree ID="m">
  <Sequence>
    <ReadSignal device_handle="{dev}" signal_id="x" value="{x}" />
    <CallDevice device_handle="{dev}" function_name="{fn}" />
  </Sequence>
</BehaviorTree>`;
    return loadBehaviorTree(path, memFiles({ [path]: xmlRoot(body, "main") }));
  };
  const errors = (r: ReturnType<typeof load>) =>
    r.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.line}: ${d.message}`);
  assert.ok(load("sim1/relayio0").tree, "a well-formed literal loads");
  assert.deepEqual(errors(load("sim1 relayio0")), [
    `7: port 'device_handle': "{dev}" is "sim1 relayio0" (a SubTree port's literal), not provider_id/device_id`,
    `8: port 'device_handle': "{dev}" is "sim1 relayio0" (a SubTree port's literal), not provider_id/device_id`,
  ]);
  assert.deepEqual(errors(load(" sim1/relayio0 ")), [
    `7: port 'device_handle': "{dev}" is " sim1/relayio0 " (a SubTree port's literal), not provider_id/device_id`,
    `8: port 'device_handle': "{dev}" is " sim1/relayio0 " (a SubTree port's literal), not provider_id/device_id`,
  ]);
  assert.deepEqual(errors(load("sim1/relayio0", " set_relay")), [
    `8: port 'function_name': "{fn}" is " set_relay" (a SubTree port's literal), which has spaces around it`,
  ]);
  // What the gate judges is what the node reads: not a trimmed handle it never calls.
  const { parsed: p } = parseBehaviorTree(
    "/bt/main.xml",
    memFiles({
      "/bt/main.xml": xmlRoot(
        `<BehaviorTree ID="main"><SubTree ID="m" dev=" sim1/relayio0 "/></BehaviorTree>` +
          `<BehaviorTree ID="m"><ReadSignal device_handle="{dev}" signal_id="x" value="{x}"/></BehaviorTree>`,
        "main",
      ),
    }),
  );
  assert.deepEqual(literalDeviceHandles(p!), [" sim1/relayio0 "]);
});

Deno.test("literalDeviceCalls: a SubTree instance's literal port stays literal when another instance maps that port to a root entry the tree writes", () => {
  // Before: the second instance's `{@a}` joined `a` to the root's `a`, which the Script writes,
  // and every instance's `a` counted as varying: the first instance's literal args (and the
  // AUTO gate's check of them) were dropped.
  const p = parsed(
    `<BehaviorTree ID="main">
  <Sequence>
    <Script code="a := 'json:{}'" />
    <SubTree ID="m" a='json:{"duty": 9}' />
    <SubTree ID="m" a="{@a}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="m">
  <CallDevice device_handle="sim1/motorctl0" function_name="set_motor_duty" args="{a}" />
</BehaviorTree>`,
    "main",
  );
  assert.deepEqual(literalDeviceCalls(p).map((c) => c.args), ['json:{"duty": 9}', null]);
});

Deno.test("literalDeviceCalls: a SubTree port the SubTree itself (or a SubTree it maps the port into) writes is not literal", () => {
  const p = parsed(
    `<BehaviorTree ID="main">
  <Sequence>
    <SubTree ID="own" a='json:{"duty": 9}' />
    <SubTree ID="nested" a='json:{"duty": 8}' />
    <SubTree ID="auto" a='json:{"duty": 7}' />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="own">
  <Sequence>
    <Script code="a := 'json:{}'" />
    <CallDevice device_handle="sim1/motorctl0" function_name="set_motor_duty" args="{a}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="nested">
  <Sequence>
    <SubTree ID="writer" out="{a}" />
    <CallDevice device_handle="sim1/motorctl1" function_name="set_motor_duty" args="{a}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="writer">
  <Script code="out := 'json:{}'" />
</BehaviorTree>
<BehaviorTree ID="auto">
  <Sequence>
    <SubTree ID="autowriter" _autoremap="true" />
    <CallDevice device_handle="sim1/motorctl2" function_name="set_motor_duty" args="{a}" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="autowriter">
  <Script code="a := 'json:{}'" />
</BehaviorTree>`,
    "main",
  );
  assert.deepEqual(literalDeviceCalls(p).map((c) => [c.deviceHandle, c.args]), [
    ["sim1/motorctl0", null],
    ["sim1/motorctl1", null],
    ["sim1/motorctl2", null],
  ]);
});
