/** GetParameter* reads with a literal name against the declared parameters (parameter_reads.ts). */
import assert from "node:assert/strict";
import {
  literalParameterReads,
  loadBehaviorTree,
  parameterReadProblems,
  verifyBehaviorTreeFile,
} from "../../../src/automation/bt/mod.ts";
import type { ParameterType } from "../../../src/config/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

const DECLARED = new Map<string, ParameterType>([
  ["temp", "double"],
  ["cycles", "int64"],
  ["dry", "bool"],
  ["recipe", "string"],
]);

const TREE = xmlRoot(`<BehaviorTree ID="Main">
  <Sequence>
    <GetParameter param="temp" value="{a}" />
    <GetParameter param="cycles" value="{b}" />
    <GetParameterInt64 param="cycles" value="{c}" />
    <GetParameterBool param="dry" value="{d}" />
    <GetParameter param="{name}" value="{e}" />
    <GetParameterInt64 param="temp" value="{f}" />
    <GetParameter param="recipe" value="{g}" />
    <GetParameterBool param=" dry" value="{h}" />
    <Script code="name := 'temp'" _skipIf="true" />
  </Sequence>
</BehaviorTree>`);

Deno.test("parameterReadProblems: undeclared names and types the node does not read; blackboard names unchecked", () => {
  const { tree, diagnostics } = loadBehaviorTree(
    "/bt/main.xml",
    memFiles({ "/bt/main.xml": TREE }),
  );
  assert.ok(tree, JSON.stringify(diagnostics));
  const problems = parameterReadProblems(literalParameterReads(tree), DECLARED);
  assert.deepEqual(problems.map((d) => [d.severity, d.path, d.message]), [
    [
      "error",
      "Main/Sequence[0]/GetParameterInt64[5]",
      `port 'param': "temp" is a double parameter; GetParameterInt64 reads only int64 parameters`,
    ],
    [
      "error",
      "Main/Sequence[0]/GetParameter[6]",
      `port 'param': "recipe" is a string parameter; GetParameter reads only double or int64 parameters`,
    ],
    [
      "error",
      "Main/Sequence[0]/GetParameterBool[7]",
      `port 'param': " dry" is not a declared parameter (automation.parameters) (did you mean "dry"?)`,
    ],
  ]);
  // --check-config without parameters (automation disabled) checks nothing of the kind.
  const files = memFiles({ "/bt/main.xml": TREE });
  assert.deepEqual(verifyBehaviorTreeFile("/bt/main.xml", files), []);
  assert.equal(verifyBehaviorTreeFile("/bt/main.xml", files, DECLARED).length, 3);
});

Deno.test("literalParameterReads: only the trees the main tree reaches through SubTree read; an unused library tree reads nothing", () => {
  const files = memFiles({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>` +
        `<GetParameter param="temp" value="{a}"/><SubTree ID="Used" _autoremap="true"/>` +
        `</Sequence></BehaviorTree>` +
        `<BehaviorTree ID="Used"><GetParameterBool param="dry" value="{d}"/></BehaviorTree>` +
        `<BehaviorTree ID="Unused"><GetParameter param="not_declared" value="{x}"/></BehaviorTree>`,
      "Main",
    ),
  });
  const { tree, diagnostics } = loadBehaviorTree("/bt/main.xml", files);
  assert.ok(tree, JSON.stringify(diagnostics));
  assert.deepEqual(literalParameterReads(tree).map((r) => r.name), ["temp", "dry"]);
  assert.deepEqual(
    verifyBehaviorTreeFile("/bt/main.xml", files, DECLARED).map((d) => d.message),
    [],
    "the library tree nobody instantiates does not refuse the file",
  );
});

Deno.test("literalParameterReads: a param a SubTree port sets to a literal is read by that name, and an undeclared one refuses the file", () => {
  // As a device handle set by a SubTree port (device_handles.ts): the node reads the literal.
  const files = memFiles({
    "/bt/main.xml": xmlRoot(
      `<BehaviorTree ID="Main"><Sequence>` +
        `<SubTree ID="Hold" which="temp" _autoremap="true"/>` +
        `<SubTree ID="Hold" which="tmep" _autoremap="true"/>` +
        `</Sequence></BehaviorTree>` +
        `<BehaviorTree ID="Hold"><GetParameter param="{which}" value="{v}"/></BehaviorTree>`,
      "Main",
    ),
  });
  const { tree, diagnostics } = loadBehaviorTree("/bt/main.xml", files);
  assert.ok(tree, JSON.stringify(diagnostics));
  assert.deepEqual(literalParameterReads(tree).map((r) => r.name), ["temp", "tmep"]);
  assert.deepEqual(
    verifyBehaviorTreeFile("/bt/main.xml", files, DECLARED).map((d) => [d.path, d.message]),
    [[
      "Main/Sequence[0]/SubTree[1]/Hold/GetParameter[0]",
      `port 'param': "tmep" is not a declared parameter (automation.parameters) (did you mean "temp"?)`,
    ]],
  );
});
