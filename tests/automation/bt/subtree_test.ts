import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { Blackboard } from "../../../src/automation/bt/blackboard.ts";
import { buildXml, FakeServices, flush, xmlRoot } from "./_helpers.ts";

const SUB_DOUBLES = `<BehaviorTree ID="Sub"><Script code="result := inner * 2"/></BehaviorTree>`;

Deno.test("SubTree remaps ports to parent entries in both directions", () => {
  const t = buildXml(xmlRoot(
    `<BehaviorTree ID="Main"><Sequence><Script code="outer := 3"/>` +
      `<SubTree ID="Sub" inner="{outer}" result="{res}"/>` +
      `<ScriptCondition code="res == 6"/></Sequence></BehaviorTree>${SUB_DOUBLES}`,
    "Main",
  ));
  equal(t.tickRoot(), "SUCCESS");
  deepStrictEqual(t.blackboard.get("res"), { type: "double", value: 6 });
});

Deno.test("SubTree passes a literal port value as a string the subtree converts", () => {
  const t = buildXml(xmlRoot(
    `<BehaviorTree ID="Main"><Sequence><SubTree ID="Sub" inner="4" result="{res}"/>` +
      `</Sequence></BehaviorTree>${SUB_DOUBLES}`,
    "Main",
  ));
  equal(t.tickRoot(), "SUCCESS");
  equal(t.blackboard.get("res")?.value, 8);
});

Deno.test("SubTree blackboard is isolated: parent keys are invisible without remapping", () => {
  const t = buildXml(xmlRoot(
    `<BehaviorTree ID="Main"><Sequence><Script code="inner := 1"/><SubTree ID="Sub"/>` +
      `</Sequence></BehaviorTree>${SUB_DOUBLES}`,
    "Main",
  ));
  throws(() => t.tickRoot(), (err: Error & { nodePath?: string }) => {
    equal(err.nodePath, "Main/Sequence[0]/SubTree[1]/Sub/Script[0]");
    return /variable "inner" not found/.test(err.message);
  });
  equal(t.blackboard.get("result"), undefined);
});

Deno.test("SubTree _autoremap shares non-private keys with the parent", () => {
  const t = buildXml(xmlRoot(
    `<BehaviorTree ID="Main"><Sequence><Script code="inner := 5"/>` +
      `<SubTree ID="Sub" _autoremap="true"/></Sequence></BehaviorTree>` +
      `<BehaviorTree ID="Sub"><Sequence><Script code="result := inner * 2; _tmp := 1"/>` +
      `</Sequence></BehaviorTree>`,
    "Main",
  ));
  equal(t.tickRoot(), "SUCCESS");
  equal(t.blackboard.get("result")?.value, 10);
  equal(t.blackboard.get("_tmp"), undefined);
});

Deno.test("SubTree custom nodes reach the services only with _autoremap", () => {
  const services = new FakeServices();
  services.setSignal("sim0/tempctl0", "temp", { type: "double", double: 21 });
  const sub = `<BehaviorTree ID="Read"><ReadSignal device_handle="sim0/tempctl0" ` +
    `signal_id="temp" value="{t}"/></BehaviorTree>`;
  const isolated = buildXml(
    xmlRoot(`<BehaviorTree ID="Main"><SubTree ID="Read" t="{temp}"/></BehaviorTree>${sub}`, "Main"),
    { services },
  );
  equal(isolated.tickRoot(), "FAILURE");
  const shared = buildXml(
    xmlRoot(
      `<BehaviorTree ID="Main"><SubTree ID="Read" _autoremap="true"/></BehaviorTree>${sub}`,
      "Main",
    ),
    { services },
  );
  equal(shared.tickRoot(), "SUCCESS");
  equal(shared.blackboard.get("t")?.value, 21);
});

Deno.test("SubTree instances each get their own blackboard scope", () => {
  const t = buildXml(xmlRoot(
    `<BehaviorTree ID="Main"><Sequence>` +
      `<SubTree ID="Count" out="{a}"/><SubTree ID="Count" out="{b}"/><SubTree ID="Count" out="{a}"/>` +
      `</Sequence></BehaviorTree>` +
      `<BehaviorTree ID="Count"><Script code="n := 1; out := n"/></BehaviorTree>`,
    "Main",
  ));
  equal(t.tickRoot(), "SUCCESS");
  deepStrictEqual(t.blackboard.localKeys().sort(), ["a", "anolis.bt_service_context", "b"]);
});

Deno.test("Blackboard @key addresses the root scope from a subtree", () => {
  const root = new Blackboard();
  const child = new Blackboard(root);
  child.set("@g", { type: "int64", value: 1 });
  deepStrictEqual(root.get("g"), { type: "int64", value: 1 });
  deepStrictEqual(child.get("@g"), { type: "int64", value: 1 });
  equal(child.get("g"), undefined);
});

Deno.test("Blackboard refuses a write that changes a typed entry's type", () => {
  const bb = new Blackboard();
  bb.createEntry("x", "double");
  bb.set("x", { type: "int64", value: 3 });
  deepStrictEqual(bb.get("x"), { type: "double", value: 3 });
  bb.set("x", { type: "string", value: "2.5" });
  deepStrictEqual(bb.get("x"), { type: "double", value: 2.5 });
  throws(() => bb.set("x", { type: "string", value: "abc" }), /type of an entry shall not change/);
  bb.createEntry("s", "string");
  throws(() => bb.set("s", { type: "double", value: 1 }), /declared string, written double/);
});

Deno.test("Blackboard declare reports BT.CPP port type conflicts (strings excepted)", () => {
  const bb = new Blackboard();
  deepStrictEqual(bb.declare("v", "double"), {});
  deepStrictEqual(bb.declare("v", "double"), {});
  deepStrictEqual(bb.declare("v", "int64"), { conflict: "double" });
  deepStrictEqual(bb.declare("v", "any"), {});
  bb.declare("s", "string");
  deepStrictEqual(bb.declare("s", "bool"), {});
  // A typed port writing (not reading) the string entry: every write of it would throw.
  deepStrictEqual(bb.declare("s", "bool", true), { conflict: "string" });
  deepStrictEqual(bb.declare("s", "string", true), {});
});

Deno.test("SubTree literal ports are the instance's own entries, also when _autoremap is written before them", async () => {
  // Two instances of one subtree, each for its own device: with `_autoremap` written first, each
  // literal went to one entry of the parent, so both instances called the last one's device.
  const services = new FakeServices();
  services.autoSettle = "resolve";
  const t = buildXml(
    xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>` +
        `<SubTree ID="Stop" _autoremap="true" dev="sim0/motorctl0"/>` +
        `<SubTree ID="Stop" _autoremap="true" dev="sim0/motorctl1"/>` +
        `</Sequence></BehaviorTree>` +
        `<BehaviorTree ID="Stop"><CallDevice device_handle="{dev}" function_name="stop"/>` +
        `</BehaviorTree>`,
      "Main",
    ),
    { services },
  );
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    statuses.push(t.tickRoot());
    await flush();
  }
  deepStrictEqual(statuses, ["RUNNING", "RUNNING", "SUCCESS"]);
  deepStrictEqual(services.calls.map((c) => c.handle), ["sim0/motorctl0", "sim0/motorctl1"]);
  equal(t.blackboard.get("dev"), undefined, "the parent has no entry of the instances' ports");
});
