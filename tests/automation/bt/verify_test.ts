import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { Diagnostic } from "../../../src/config/mod.ts";
import {
  loadBehaviorTree,
  MAX_TREE_DEPTH,
  verifyBehaviorTreeFile,
} from "../../../src/automation/bt/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

function load(files: Record<string, string>, path = "/bt/main.xml") {
  return loadBehaviorTree(path, memFiles(files));
}

/** [line, severity, path, message pattern] of each diagnostic, in report order. */
function summary(ds: Diagnostic[]): [number, string, string, string][] {
  return ds.map((d) => [d.line, d.severity, d.path, d.message]);
}

function expectDiagnostics(ds: Diagnostic[], expected: [number, string, string, RegExp][]): void {
  const got = summary(ds);
  equal(got.length, expected.length, `diagnostics: ${JSON.stringify(got, null, 1)}`);
  expected.forEach(([line, severity, path, re], i) => {
    const [gl, gs, gp, gm] = got[i]!;
    deepStrictEqual([gl, gs, gp], [line, severity, path], `diagnostic ${i}: ${gm}`);
    ok(re.test(gm), `diagnostic ${i}: '${gm}' does not match ${re}`);
  });
}

const MANY_ERRORS = `<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main">
    <Sequence>
      <Sequance/>
      <CallDevice function_name="f"/>
      <ReadSignal device_handle="a/b" signal_id="s" valeu="{v}"/>
      <Repeat num_cycles="many"><AlwaysSuccess/></Repeat>
      <Script code="x := := 1"/>
      <Inverter><AlwaysSuccess/><AlwaysFailure/></Inverter>
      <AlwaysSuccess><AlwaysFailure/></AlwaysSuccess>
      <IfThenElse><AlwaysSuccess/></IfThenElse>
      <SubTree ID="Mian"/>
      <GetParameter param="p" value="literal"/>
      <AlwaysSuccess _skipIf="1 +"/>
      <Delay delay_msec="-5"><AlwaysSuccess/></Delay>
      <CheckBool value="maybe"/>
      <Precondition if="true" else="DONE"><AlwaysSuccess/></Precondition>
      <Parallel success_count="3"><AlwaysSuccess/><AlwaysSuccess/></Parallel>
      <Sequence/>
      <Action ID="AlwaysSuccess"/>
      <Action/>
      <CallDevice device_handle="d/x" function_name="f" args='{"a": 1}'/>
    </Sequence>
  </BehaviorTree>
</root>
`;

Deno.test("verifyBehaviorTreeFile reports every problem at once with line and node path", () => {
  const ds = verifyBehaviorTreeFile("/bt/main.xml", memFiles({ "/bt/main.xml": MANY_ERRORS }));
  const p = "Main/Sequence[0]";
  expectDiagnostics(ds, [
    [4, "error", `${p}/Sequance[0]`, /unknown node type "Sequance" \(did you mean "Sequence"\?\)/],
    [5, "error", `${p}/CallDevice[1]`, /missing required port 'device_handle' of CallDevice/],
    [6, "error", `${p}/ReadSignal[2]`, /unknown port "valeu".*did you mean "value"/],
    [7, "error", `${p}/Repeat[3]`, /port 'num_cycles': "many" is not an integer/],
    [8, "error", `${p}/Script[4]`, /port 'code': script error at offset 5/],
    [9, "error", `${p}/Inverter[5]`, /decorator Inverter must have exactly 1 child \(has 2\)/],
    [10, "error", `${p}/AlwaysSuccess[6]`, /leaf node and cannot have children/],
    [11, "error", `${p}/IfThenElse[7]`, /needs 2 to 3 children \(has 1\)/],
    [12, "error", `${p}/SubTree[8]`, /unknown SubTree ID "Mian" \(did you mean "Main"\?\)/],
    [13, "warning", `${p}/GetParameter[9]`, /output port 'value' holds the literal/],
    [14, "error", `${p}/AlwaysSuccess[10]`, /attribute _skipIf: script error at offset 3/],
    [15, "error", `${p}/Delay[11]`, /"-5" is not a non-negative integer/],
    [16, "error", `${p}/CheckBool[12]`, /"maybe" is not a boolean/],
    [17, "error", `${p}/Precondition[13]`, /"DONE" is not a node status/],
    [18, "error", `${p}/Parallel[14]`, /success_count=3 exceeds the number of children \(2\)/],
    [19, "error", `${p}/Sequence[15]`, /needs at least 1 child \(has 0\)/],
    [21, "error", `${p}/Action[17]`, /<Action> needs an ID attribute/],
    [22, "error", `${p}/CallDevice[18]`, /not a valid blackboard reference.*json:\{\.\.\.\}/],
  ]);
  equal(ds[0]!.column, 7);
  equal(ds[0]!.file, "/bt/main.xml");
  equal(load({ "/bt/main.xml": MANY_ERRORS }).tree, undefined);
});

Deno.test("loadBehaviorTree returns the tree of a clean file with no diagnostics", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence><AlwaysSuccess name="first"/>` +
        `<CallDevice device_handle="d/x" function_name="f" args='json:{"a":1}' reason="r"/>` +
        `</Sequence></BehaviorTree>`,
    ),
  });
  deepStrictEqual(r.diagnostics, []);
  equal(r.tree?.mainTreeId, "Main");
  equal(r.tree?.id, "main");
});

Deno.test("loadBehaviorTree reports an XML syntax error with its line", () => {
  const r = load({
    "/bt/main.xml": `<root BTCPP_format="4">\n<BehaviorTree ID="A">\n<Sequence>\n</root>\n`,
  });
  equal(r.tree, undefined);
  equal(r.diagnostics.length, 1);
  equal(r.diagnostics[0]!.severity, "error");
  equal(r.diagnostics[0]!.line, 4);
});

Deno.test("loadBehaviorTree reports an unreadable file", () => {
  const r = load({}, "/bt/none.xml");
  expectDiagnostics(r.diagnostics, [[0, "error", "", /cannot read behavior tree file/]]);
});

Deno.test("loadBehaviorTree reports a missing or ambiguous main tree", () => {
  const two = `<BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree>` +
    `<BehaviorTree ID="B"><AlwaysSuccess/></BehaviorTree>`;
  expectDiagnostics(load({ "/bt/main.xml": xmlRoot(two) }).diagnostics, [
    [1, "error", "", /several BehaviorTrees \(A, B\) and no main_tree_to_execute/],
  ]);
  expectDiagnostics(load({ "/bt/main.xml": xmlRoot(two, "C") }).diagnostics, [
    [1, "error", "", /main_tree_to_execute="C" names no BehaviorTree \(known: A, B\)/],
  ]);
  expectDiagnostics(load({ "/bt/main.xml": xmlRoot("") }).diagnostics, [
    [1, "error", "", /no <BehaviorTree> defined/],
  ]);
  equal(load({ "/bt/main.xml": xmlRoot(two, "B") }).tree?.mainTreeId, "B");
});

Deno.test("loadBehaviorTree checks the root element and BTCPP_format", () => {
  const tree = `<BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree>`;
  const noFormat = load({ "/bt/main.xml": `<root>${tree}</root>` });
  expectDiagnostics(noFormat.diagnostics, [[1, "warning", "", /assuming BTCPP_format="4"/]]);
  ok(noFormat.tree);
  expectDiagnostics(load({ "/bt/main.xml": `<root BTCPP_format="3">${tree}</root>` }).diagnostics, [
    [1, "error", "", /BTCPP_format="3" is not supported/],
  ]);
  expectDiagnostics(load({ "/bt/main.xml": `<tree>${tree}</tree>` }).diagnostics, [
    [1, "error", "", /root element must be <root>/],
  ]);
});

Deno.test("loadBehaviorTree reports duplicate IDs and trees without exactly one root", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree>\n` +
        `<BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree>\n` +
        `<BehaviorTree ID="B"><AlwaysSuccess/><AlwaysFailure/></BehaviorTree>`,
      "A",
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [3, "error", "A", /duplicate BehaviorTree ID "A" \(first defined at \/bt\/main.xml:2\)/],
    [4, "error", "B", /must have exactly one root node \(has 2\)/],
  ]);
});

Deno.test("loadBehaviorTree resolves includes relative to the including file", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<include path="sub/parts.xml"/>\n<BehaviorTree ID="Main"><Sequence>` +
        `<SubTree ID="Part"/><SubTree ID="Common"/></Sequence></BehaviorTree>`,
      "Main",
    ),
    "/bt/sub/parts.xml": xmlRoot(
      `<include path="../common.xml"/><BehaviorTree ID="Part"><AlwaysSuccess/></BehaviorTree>`,
    ),
    "/bt/common.xml": xmlRoot(`<BehaviorTree ID="Common"><AlwaysSuccess/></BehaviorTree>`),
  });
  deepStrictEqual(r.diagnostics, []);
  deepStrictEqual(r.tree?.files, ["/bt/main.xml", "/bt/sub/parts.xml", "/bt/common.xml"]);
  deepStrictEqual([...r.tree!.trees.keys()].sort(), ["Common", "Main", "Part"]);
});

Deno.test("loadBehaviorTree reports errors inside an included file with that file's lines", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<include path="parts.xml"/><BehaviorTree ID="Main"><SubTree ID="Part"/></BehaviorTree>`,
      "Main",
    ),
    "/bt/parts.xml": `<root BTCPP_format="4">\n<BehaviorTree ID="Part">\n  <Bogus/>\n` +
      `</BehaviorTree>\n</root>\n`,
  });
  equal(r.tree, undefined);
  equal(r.diagnostics.length, 1);
  deepStrictEqual(
    [
      r.diagnostics[0]!.file,
      r.diagnostics[0]!.line,
      r.diagnostics[0]!.column,
      r.diagnostics[0]!.path,
    ],
    ["/bt/parts.xml", 3, 3, "Part/Bogus[0]"],
  );
});

Deno.test("loadBehaviorTree detects an include cycle and a missing include", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<include path="a.xml"/>\n<include path="gone.xml"/>\n` +
        `<BehaviorTree ID="Main"><AlwaysSuccess/></BehaviorTree>`,
      "Main",
    ),
    "/bt/a.xml": xmlRoot(`<include path="./b.xml"/>`),
    "/bt/b.xml": xmlRoot(`<include path="a.xml"/>`),
  });
  expectDiagnostics(r.diagnostics, [
    [2, "error", "", /include cycle: \/bt\/a.xml -> \/bt\/b.xml -> \/bt\/a.xml/],
    [3, "error", "", /cannot read included file \/bt\/gone.xml/],
  ]);
  equal(r.diagnostics[0]!.file, "/bt/b.xml");
});

Deno.test("loadBehaviorTree reports SubTree recursion", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="A"><SubTree ID="B"/></BehaviorTree>\n` +
        `<BehaviorTree ID="B"><Sequence><SubTree ID="A"/></Sequence></BehaviorTree>`,
      "A",
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [3, "error", "B/Sequence[0]/SubTree[0]", /SubTree recursion: A -> B -> A/],
  ]);
});

Deno.test("loadBehaviorTree reports a blackboard port type conflict (BT.CPP load error)", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>\n` +
        `<GetParameterInt64 param="n" value="{x}"/>\n` +
        `<GetParameter param="t" value="{x}"/>\n` +
        `<ReadSignal device_handle="d/x" signal_id="s" quality="{q}"/>\n` +
        `<CheckBool value="{q}"/>\n` +
        `</Sequence></BehaviorTree>`,
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      4,
      "error",
      "Main/Sequence[0]/GetParameter[1]",
      /entry "x" was declared as int64 and port 'value' of GetParameter uses it as double/,
    ],
  ]);
  equal(r.tree, undefined);
});

Deno.test("loadBehaviorTree reports a typed output port writing into an entry a string port declared (the write would fault the tick)", () => {
  // A string entry may be read by typed ports (CheckBool of a ReadSignal quality, above), but a
  // typed port cannot write into it: the first GetParameter success threw at the tick.
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>\n` +
        `<EmitOnChangeOrInterval key="{x}" emit="{e}"/>\n` +
        `<GetParameter param="t" value="{x}"/>\n` +
        `</Sequence></BehaviorTree>`,
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      4,
      "error",
      "Main/Sequence[0]/GetParameter[1]",
      /entry "x" was declared as string and port 'value' of GetParameter uses it as double/,
    ],
  ]);
  equal(r.tree, undefined);
});

Deno.test("loadBehaviorTree warns when a custom node in a SubTree cannot reach the services", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence><SubTree ID="S"/><SubTree ID="S" _autoremap="true"/>` +
        `</Sequence></BehaviorTree>\n` +
        `<BehaviorTree ID="S"><CheckQuality device_handle="d/x" signal_id="s"/></BehaviorTree>`,
      "Main",
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [3, "warning", "Main/Sequence[0]/SubTree[0]/S/CheckQuality[0]", /without _autoremap/],
  ]);
  ok(r.tree);
});

Deno.test("loadBehaviorTree accepts Groot2 files (TreeNodesModel, <Action ID>, _ attributes)", () => {
  const r = load({
    "/bt/main.xml": `<?xml version="1.0" encoding="UTF-8"?>
<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main" _description="demo">
    <Sequence _uid="3">
      <Action ID="CheckQuality" device_handle="d/x" signal_id="s" name="quality ok"/>
      <Condition ID="CheckBool" value="true"/>
    </Sequence>
  </BehaviorTree>
  <TreeNodesModel>
    <Action ID="CheckQuality"><input_port name="device_handle"/></Action>
  </TreeNodesModel>
</root>
`,
  });
  deepStrictEqual(r.diagnostics, []);
  ok(r.tree);
});

Deno.test("loadBehaviorTree refuses a literal device_handle that names no provider/device, with its line", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      [
        `<BehaviorTree ID="Main"><Sequence>`,
        `<ReadSignal device_handle="motorctl0" signal_id="s" value="{v}"/>`,
        `<ReadSignal device_handle="  " signal_id="s" value="{v}"/>`,
        `<CallDevice device_handle=" sim0/motorctl0" function_name="f" args='json:{}'/>`,
        `<CheckQuality device_handle="sim0/" signal_id="s"/>`,
        `<ReadSignal device_handle="{dev}" signal_id="s" value="{v}"/>`,
        `<ReadSignal device_handle="sim0/motorctl0" signal_id="s" value="{v}"/>`,
        `</Sequence></BehaviorTree>`,
      ].join("\n"),
    ),
  });
  const handles = r.diagnostics.filter((d) => /device_handle/.test(d.message));
  deepStrictEqual(
    handles.map((d) => [d.line, d.severity, d.message]),
    [
      [3, "error", `port 'device_handle': "motorctl0" is not provider_id/device_id`],
      [4, "error", `port 'device_handle': "  " is not provider_id/device_id`],
      [5, "error", `port 'device_handle': " sim0/motorctl0" is not provider_id/device_id`],
      [6, "error", `port 'device_handle': "sim0/" is not provider_id/device_id`],
    ],
  );
  equal(r.tree, undefined, "no tree is built from a file with errors");
});

Deno.test("loadBehaviorTree refuses a literal function_name that is blank or has spaces around it, with its line", () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      [
        `<BehaviorTree ID="Main"><Sequence>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name=" set_motor_duty" args='json:{}'/>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name="" args='json:{}'/>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty " args='json:{}'/>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name="{fn}" args='json:{}'/>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{}'/>`,
        `</Sequence></BehaviorTree>`,
      ].join("\n"),
    ),
  });
  const names = r.diagnostics.filter((d) => /function_name/.test(d.message));
  deepStrictEqual(
    names.map((d) => [d.line, d.severity, d.message]),
    [
      [3, "error", `port 'function_name': " set_motor_duty" has spaces around it`],
      [4, "error", `port 'function_name': "" is blank`],
      [5, "error", `port 'function_name': "set_motor_duty " has spaces around it`],
    ],
  );
  equal(r.tree, undefined, "no tree is built from a file with errors");
});

/** `n` Sequences nested in one another around an AlwaysSuccess: a main tree `n + 1` nodes deep. */
function nested(n: number): string {
  return "<Sequence>".repeat(n) + "<AlwaysSuccess/>" + "</Sequence>".repeat(n);
}

Deno.test("loadBehaviorTree refuses a main tree nested deeper than MAX_TREE_DEPTH with a diagnostic, not a stack overflow", () => {
  const tree = (n: number) =>
    load({ "/bt/main.xml": xmlRoot(`<BehaviorTree ID="Main">${nested(n)}</BehaviorTree>`) });
  // Far deeper (a 63 KB file): every walk of the elements overflowed the call stack.
  const deep = tree(3000);
  equal(deep.tree, undefined);
  ok(deep.diagnostics.some((d) => d.severity === "error"), JSON.stringify(deep.diagnostics));
  // The exact limit loads; one node more is refused, at the main tree's root.
  ok(tree(MAX_TREE_DEPTH - 1).tree, "a tree exactly MAX_TREE_DEPTH nodes deep loads");
  expectDiagnostics(tree(MAX_TREE_DEPTH).diagnostics, [
    [2, "error", "Main/Sequence[0]", /nests 257 nodes deep .*more than MAX_TREE_DEPTH \(256\)/],
  ]);
});

Deno.test("loadBehaviorTree refuses a chain of SubTrees nesting the main tree deeper than MAX_TREE_DEPTH, however long", () => {
  // T0 runs T1 ... runs Tn: each SubTree node is its tree's root, so the main tree is n + 1 deep.
  const chain = (n: number) => {
    let body = "";
    for (let i = 0; i < n; i++) {
      body += `<BehaviorTree ID="T${i}"><SubTree ID="T${i + 1}"/></BehaviorTree>\n`;
    }
    return load({
      "/bt/main.xml": xmlRoot(
        `${body}<BehaviorTree ID="T${n}"><AlwaysSuccess/></BehaviorTree>`,
        "T0",
      ),
    });
  };
  // 20000 links (1.2 MB): the recursion check and the build overflowed the call stack.
  const long = chain(20_000);
  equal(long.tree, undefined);
  equal(long.diagnostics.filter((d) => d.severity === "error").length, 1);
  ok(chain(MAX_TREE_DEPTH - 1).tree, "a chain exactly MAX_TREE_DEPTH nodes deep loads");
  expectDiagnostics(chain(MAX_TREE_DEPTH).diagnostics, [
    [2, "error", "T0/SubTree[0]", /nests 257 nodes deep \(SubTrees expanded\)/],
  ]);
});

Deno.test("loadBehaviorTree refuses a literal expected_quality no signal can have (a quality check that never succeeds)", () => {
  // The HTTP API says UNAVAILABLE where the tree sees UNKNOWN: `Inverter` over such a check (stop
  // the motor when the signal is UNAVAILABLE) never fired.
  const r = load({
    "/bt/main.xml": xmlRoot(
      [
        `<BehaviorTree ID="Main"><Sequence>`,
        `<CheckQuality device_handle="sim0/x" signal_id="s" expected_quality="UNAVAILABLE"/>`,
        `<CheckQuality device_handle="sim0/x" signal_id="s" expected_quality="ok"/>`,
        `<CheckQuality device_handle="sim0/x" signal_id="s" expected_quality="UNKNOWN"/>`,
        `<CheckQuality device_handle="sim0/x" signal_id="s" expected_quality="{want}"/>`,
        `<Script code="want := 'STALE'"/>`,
        `</Sequence></BehaviorTree>`,
      ].join("\n"),
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      3,
      "error",
      "Main/Sequence[0]/CheckQuality[0]",
      /^port 'expected_quality': "UNAVAILABLE" is none of OK, STALE, FAULT, UNKNOWN \(a signal the HTTP API shows UNAVAILABLE is UNKNOWN here\): the check could never succeed$/,
    ],
    [4, "error", "Main/Sequence[0]/CheckQuality[1]", /"ok" is none of OK, STALE, FAULT/],
  ]);
  equal(r.tree, undefined);
});

Deno.test("loadBehaviorTree refuses a literal BuildArgsJson arg type none of int64, double, bool, string (the slot never builds)", () => {
  // `float` for double: the node failed at every tick, so the CallDevice after it (a stop) was
  // never made.
  const r = load({
    "/bt/main.xml": xmlRoot(
      [
        `<BehaviorTree ID="Main"><Sequence>`,
        `<BuildArgsJson arg1_name="motor_index" arg1_type="int64" arg1_num="1" ` +
        `arg2_name="duty" arg2_type="float" arg2_num="0.0" json="{args}"/>`,
        `<BuildArgsJson arg3_type="int" arg3_num="1" json="{unused}"/>`,
        `<BuildArgsJson arg1_name="{n}" arg1_type="{t}" arg1_num="1" json="{more}"/>`,
        `<Script code="n := 'a'; t := 'double'"/>`,
        `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="{args}"/>`,
        `</Sequence></BehaviorTree>`,
      ].join("\n"),
    ),
  });
  // The unnamed slot (arg3) is skipped whatever its type; the types from entries are judged at
  // the tick.
  expectDiagnostics(r.diagnostics, [
    [
      3,
      "error",
      "Main/Sequence[0]/BuildArgsJson[0]",
      /^port 'arg2_type': "float" is none of int64, double, bool, string: the node would fail at every tick$/,
    ],
  ]);
  equal(r.tree, undefined);
});

Deno.test('loadBehaviorTree refuses Precondition else="IDLE": a node may not return IDLE (the first false `if` faulted the tick)', () => {
  const r = load({
    "/bt/main.xml": xmlRoot(
      [
        `<BehaviorTree ID="Main"><Sequence>`,
        `<Precondition if="false" else="IDLE"><AlwaysSuccess/></Precondition>`,
        `<Precondition if="false" else="SKIPPED"><AlwaysSuccess/></Precondition>`,
        `</Sequence></BehaviorTree>`,
      ].join("\n"),
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      3,
      "error",
      "Main/Sequence[0]/Precondition[0]",
      /^port 'else': .*a node status \(RUNNING, SUCCESS, FAILURE, SKIPPED\)/,
    ],
  ]);
  equal(r.tree, undefined);
});

Deno.test("loadBehaviorTree refuses a SetBlackboard literal a typed port cannot read from its entry (BT.CPP throws at the tick)", () => {
  // BT.CPP's SetBlackboard stores the text, converted where the entry is typed: "3.7" is no int,
  // so the first tick threw. Refused at load, naming the SetBlackboard, its value and the reader.
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>\n` +
        `<SetBlackboard value="3.7" output_key="n"/>\n` +
        `<Repeat num_cycles="{n}"><AlwaysSuccess/></Repeat>\n` +
        `<SetBlackboard value="2.5" output_key="{t}"/>\n` +
        `<Sleep msec="{t}"/>\n` +
        `<SetBlackboard value="4" output_key="k"/>\n` +
        `<Repeat num_cycles="{k}"><AlwaysSuccess/></Repeat>\n` +
        `<SetBlackboard value="3.7" output_key="d"/>\n` +
        `<BuildArgsJson arg1_name="a" arg1_type="double" arg1_num="{d}" json="{j}"/>\n` +
        `</Sequence></BehaviorTree>`,
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      3,
      "error",
      "Main/Sequence[0]/SetBlackboard[0]",
      /^port "value": "3\.7" is not an integer, and blackboard entry "n" is read as int64 by port 'num_cycles' of Repeat at \/bt\/main\.xml:4:\d+/,
    ],
    [
      5,
      "error",
      "Main/Sequence[0]/SetBlackboard[2]",
      /^port "value": "2\.5" is not an integer, and blackboard entry "t" is read as int64 by port 'msec' of Sleep at \/bt\/main\.xml:6:\d+/,
    ],
  ]);
  equal(r.tree, undefined);
});

Deno.test("loadBehaviorTree refuses a SubTree literal port a typed port inside the subtree cannot read (BT.CPP throws at the tick)", () => {
  // <SubTree ID="S" n="3.7"/> stores the text in S's own entry 'n', converted where it is read:
  // Repeat's num_cycles="{n}" inside S (or deeper, through a remapping) threw at the first tick.
  const r = load({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>\n` +
        `<SubTree ID="S" n="3.7" t="2.5" k="4" label="x"/>\n` +
        `<SubTree ID="S" n="5" t="7" k="4" label="x"/>\n` +
        `</Sequence></BehaviorTree>\n` +
        `<BehaviorTree ID="S"><Sequence>\n` +
        `<Repeat num_cycles="{n}"><AlwaysSuccess/></Repeat>\n` +
        `<SubTree ID="T" m="{t}"/>\n` +
        `<Repeat num_cycles="{k}"><AlwaysSuccess/></Repeat>\n` +
        `<SetBlackboard value="{label}" output_key="copy"/>\n` +
        `</Sequence></BehaviorTree>\n` +
        `<BehaviorTree ID="T"><Sleep msec="{m}"/></BehaviorTree>`,
      "Main",
    ),
  });
  expectDiagnostics(r.diagnostics, [
    [
      3,
      "error",
      "Main/Sequence[0]/SubTree[0]",
      /^port "n": "3\.7" is not an integer, and blackboard entry "n" is read as int64 by port 'num_cycles' of Repeat at \/bt\/main\.xml:7:\d+/,
    ],
    [
      3,
      "error",
      "Main/Sequence[0]/SubTree[0]",
      /^port "t": "2\.5" is not an integer, and blackboard entry "t" is read as int64 by port 'msec' of Sleep at \/bt\/main\.xml:12:\d+/,
    ],
  ]);
  equal(r.tree, undefined);
});
