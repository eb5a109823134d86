/**
 * A tree file's text (an ID, a node type, a port's name or value, a blackboard key, a script's
 * token) and what a tick reads (a blackboard string) are named in a diagnostic or an error cut to
 * PROVIDER_TEXT_CHARS and JSON-quoted: 10 kB of it holding a quote and a line break can neither
 * flood nor forge the message.
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { MAX_NAMED_IN_WARNING, PROVIDER_TEXT_CHARS } from "../../../src/common/mod.ts";
import type { Diagnostic } from "../../../src/config/mod.ts";
import {
  loadBehaviorTree,
  parseBehaviorTree,
  verifyBehaviorTreeFile,
} from "../../../src/automation/bt/mod.ts";
import { Blackboard } from "../../../src/automation/bt/blackboard.ts";
import { parseScript, runScript } from "../../../src/automation/bt/script.ts";
import { buildXml, FakeServices, memFiles, xmlRoot } from "./_helpers.ts";

const LONG = 10_000;
/** 10 kB of a tree file's attribute as the XML writes it: a quote and a line break in it. */
const WRITTEN = `T&quot;&#10;${"t".repeat(LONG)}`;
/** WRITTEN as the tree reads it. */
const TEXT = `T"\n${"t".repeat(LONG)}`;
/** A name of 10 kB (an XML name, a blackboard key, a script identifier: no quote possible). */
const NAME = `k${"x".repeat(LONG)}`;
/** Longest message any of these may make (each names a few texts, each cut). */
const MAX_MESSAGE_CHARS = 1_000;

/** `text` cut to PROVIDER_TEXT_CHARS, marked with an ellipsis, JSON-quoted. */
function quotedCut(text: string): string {
  return JSON.stringify(`${text.slice(0, PROVIDER_TEXT_CHARS)}\u2026`);
}

/** The one message that starts with `start`: bounded, on one line, naming `text` quoted and cut. */
function named(messages: readonly string[], start: string, text: string): string {
  const found = messages.filter((m) => m.startsWith(start));
  equal(found.length, 1, `one message starting ${start}: ${messagesText(messages)}`);
  const m = found[0]!;
  ok(m.includes(quotedCut(text)), `${start}: ${m.slice(0, 400)}`);
  return m;
}

/** verifyBehaviorTreeFile of `xml` as /bt/main.xml, with no parameters declared. */
function verifyMain(xml: string): Diagnostic[] {
  return verifyBehaviorTreeFile("/bt/main.xml", memFiles({ "/bt/main.xml": xml }), new Map());
}

/** Every message bounded, and free of control characters (a line break would forge a line). */
function allBounded(messages: readonly string[]): void {
  ok(messages.length > 0);
  for (const m of messages) {
    ok(m.length <= MAX_MESSAGE_CHARS, `${m.length} chars: ${m.slice(0, 400)}`);
    // deno-lint-ignore no-control-regex
    ok(!/[\x00-\x1f]/.test(m), m.slice(0, 400));
  }
}

function messagesText(messages: readonly string[]): string {
  return messages.map((m) => m.slice(0, 200)).join(" | ");
}

Deno.test("parseBehaviorTree names a tree's ID, main_tree_to_execute and BTCPP_format of 10 kB cut and quoted", () => {
  const xml = `<root BTCPP_format="4" main_tree_to_execute="M${WRITTEN}">\n` +
    `<BehaviorTree ID="${WRITTEN}"><AlwaysSuccess/><AlwaysSuccess/></BehaviorTree>\n` +
    `<BehaviorTree ID="${WRITTEN}"><AlwaysSuccess/></BehaviorTree>\n</root>\n`;
  const { diagnostics } = parseBehaviorTree("/bt/main.xml", memFiles({ "/bt/main.xml": xml }));
  const messages = diagnostics.map((d) => d.message);
  allBounded(messages);
  named(messages, "BehaviorTree ", TEXT);
  named(messages, "duplicate BehaviorTree ID ", TEXT);
  const main = named(messages, "main_tree_to_execute=", `M${TEXT}`);
  // The known trees, unquoted: cut, the line break escaped.
  ok(main.includes(`(known: T"\\n${"t".repeat(PROVIDER_TEXT_CHARS - 3)}\u2026)`), main);

  const format = `<root BTCPP_format="${WRITTEN}"><BehaviorTree ID="A"><AlwaysSuccess/>` +
    `</BehaviorTree></root>`;
  const second = parseBehaviorTree("/bt/main.xml", memFiles({ "/bt/main.xml": format }));
  const formatMessages = second.diagnostics.map((d) => d.message);
  allBounded(formatMessages);
  named(formatMessages, "BTCPP_format=", TEXT);
});

Deno.test("verifyBehaviorTreeFile names a node type, a port, a port's value, a SubTree ID, a script token and a parameter of 10 kB cut and quoted", () => {
  const xml = xmlRoot(`<BehaviorTree ID="Main"><Sequence>
  <Action ID="${WRITTEN}"/>
  <ReadSignal device_handle="a/b" signal_id="s" ${NAME}="{v}"/>
  <Repeat num_cycles="${WRITTEN}"><AlwaysSuccess/></Repeat>
  <CallDevice device_handle="${WRITTEN}" function_name="f"/>
  <SubTree ID="${WRITTEN}"/>
  <Script code="1 ${NAME}"/>
</Sequence></BehaviorTree>`);
  const diagnostics = verifyMain(xml);
  const messages = diagnostics.map((d) => d.message);
  allBounded(messages);
  named(messages, "unknown node type ", TEXT);
  named(messages, "unknown port ", NAME);
  named(messages, "port 'num_cycles': ", TEXT);
  named(messages, "port 'device_handle': ", TEXT);
  named(messages, "unknown SubTree ID ", TEXT);
  named(messages, "port 'code': script error", NAME);
  // Parameter reads are judged in a file free of other errors.
  const param = xmlRoot(
    `<BehaviorTree ID="Main"><GetParameter param="${WRITTEN}" value="{p}"/></BehaviorTree>`,
  );
  const params = verifyMain(param).map((d) => d.message);
  allBounded(params);
  named(params, "port 'param': ", TEXT);
});

Deno.test("loadBehaviorTree names a literal and the blackboard keys a build or a read judges, of 10 kB, cut and quoted", () => {
  const load = (body: string) =>
    loadBehaviorTree(
      "/bt/main.xml",
      memFiles({
        "/bt/main.xml": xmlRoot(
          `<BehaviorTree ID="Main"><Sequence>${body}` + "</Sequence></BehaviorTree>",
        ),
      }),
    ).diagnostics.map((d) => d.message);

  const literal = load(
    `<SetBlackboard value="${WRITTEN}" output_key="n"/>` +
      `<Repeat num_cycles="{n}"><AlwaysSuccess/></Repeat>`,
  );
  allBounded(literal);
  named(literal, 'port "value": ', TEXT);

  const conflict = load(
    `<GetParameterInt64 param="n" value="{${NAME}}"/><GetParameter param="t" value="{${NAME}}"/>`,
  );
  allBounded(conflict);
  named(conflict, "port type conflict: blackboard entry ", NAME);

  const unwritten = load(`<CallDevice device_handle="a/b" function_name="{${NAME}}"/>`);
  allBounded(unwritten);
  named(unwritten, "port 'function_name': blackboard entry ", NAME);
});

Deno.test("A tick's script, blackboard and CallDevice errors name a variable, a string value and a port of 10 kB cut and quoted", () => {
  const value = `v"\u001b\r\n${"v".repeat(LONG)}`;
  const errors: string[] = [];
  const caught = (f: () => unknown) =>
    throws(f, (err: Error) => {
      errors.push(err.message);
      return true;
    });
  caught(() => runScript(parseScript(`${NAME} + 1`), new Blackboard()));
  const bb = new Blackboard();
  bb.set("s", { type: "string", value });
  caught(() => runScript(parseScript("s - 1"), bb));
  caught(() => runScript(parseScript("s ? 1 : 2"), bb));
  const typed = new Blackboard();
  typed.createEntry(NAME, "int64");
  caught(() => typed.set(NAME, { type: "string", value }));
  allBounded(errors);
  named(errors, "script: variable ", NAME);
  named(errors, "operator '-': ", value);
  named(errors, "cannot convert the string ", value);
  ok(errors[3]!.includes(quotedCut(NAME)) && errors[3]!.includes(quotedCut(value)), errors[3]);

  // An entry holding "": refused naming the port as the tree wrote it, `{key}`.
  const services = new FakeServices();
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="Main"><Sequence><Script code="${NAME} := ''"/>` +
        `<CallDevice device_handle="{${NAME}}" function_name="f" error="{err}"/>` +
        `</Sequence></BehaviorTree>`,
    ),
    { services },
  );
  equal(tree.tickRoot(), "FAILURE");
  const err = tree.blackboard.get("err");
  ok(err?.type === "string");
  allBounded([err.value]);
  named([err.value], `device_handle must be 'provider/device', got "" from `, `{${NAME}}`);
});

/** `text` cut to PROVIDER_TEXT_CHARS and marked with an ellipsis, its line breaks escaped. */
function namedCut(text: string): string {
  return `${text.slice(0, PROVIDER_TEXT_CHARS).replaceAll("\n", "\\n")}\u2026`;
}

/** Every diagnostic's path bounded, free of control characters, and `paths` among them. */
function pathsBounded(diagnostics: readonly Diagnostic[], ...paths: string[]): void {
  for (const d of diagnostics) {
    ok(d.path.length <= MAX_MESSAGE_CHARS, `${d.path.length} chars: ${d.path.slice(0, 400)}`);
    // deno-lint-ignore no-control-regex
    ok(!/[\x00-\x1f]/.test(d.path), d.path.slice(0, 400));
  }
  const all = diagnostics.map((d) => d.path);
  for (const p of paths) ok(all.includes(p), `path ${p.slice(0, 200)} in ${messagesText(all)}`);
}

Deno.test("parseBehaviorTree cuts a tree's ID of 10 kB in a diagnostic's path, and an element's name of 10 kB in its message", () => {
  const xml = `<root BTCPP_format="4">\n` +
    `<BehaviorTree ID="${WRITTEN}"><AlwaysSuccess/><AlwaysSuccess/></BehaviorTree>\n` +
    `<BehaviorTree ID="${WRITTEN}"><AlwaysSuccess/></BehaviorTree>\n<${NAME}/>\n</root>\n`;
  const { diagnostics } = parseBehaviorTree("/bt/main.xml", memFiles({ "/bt/main.xml": xml }));
  const messages = diagnostics.map((d) => d.message);
  allBounded(messages);
  pathsBounded(diagnostics, namedCut(TEXT));
  equal(diagnostics.filter((d) => d.path === namedCut(TEXT)).length, 2, messagesText(messages));
  const element = messages.filter((m) => m.startsWith("unknown element <"));
  equal(element.length, 1, messagesText(messages));
  equal(element[0], `unknown element <${namedCut(NAME)}> under <root> ignored`);

  const notRoot = parseBehaviorTree(
    "/bt/main.xml",
    memFiles({
      "/bt/main.xml": `<${NAME}><BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree></${NAME}>`,
    }),
  ).diagnostics.map((d) => d.message);
  allBounded(notRoot);
  equal(notRoot[0], `the root element must be <root>, found <${namedCut(NAME)}>`);
});

Deno.test("verifyBehaviorTreeFile and loadBehaviorTree cut a tree's ID, a node's type and an element's name of 10 kB in a diagnostic's path and in a SubTree cycle", () => {
  const xml = xmlRoot(`<BehaviorTree ID="${WRITTEN}"><Sequence>
  <Action ID="${WRITTEN}"><AlwaysSuccess/></Action>
  <${NAME}><AlwaysSuccess/></${NAME}>
  <SubTree ID="${WRITTEN}"/>
</Sequence></BehaviorTree>`);
  const diagnostics = verifyMain(xml);
  const messages = diagnostics.map((d) => d.message);
  allBounded(messages);
  const root = `${namedCut(TEXT)}/Sequence[0]`;
  pathsBounded(
    diagnostics,
    `${root}/${namedCut(TEXT)}[0]`,
    `${root}/${namedCut(NAME)}[1]`,
    `${root}/SubTree[2]`,
  );
  const cycle = messages.filter((m) => m.startsWith("SubTree recursion: "));
  equal(cycle.length, 1, messagesText(messages));
  equal(cycle[0], `SubTree recursion: ${namedCut(TEXT)} -> ${namedCut(TEXT)}`);

  // The build's paths (a port type conflict) and the blackboard reads' (a key never written).
  const load = (body: string) =>
    loadBehaviorTree(
      "/bt/main.xml",
      memFiles({
        "/bt/main.xml": xmlRoot(
          `<BehaviorTree ID="${WRITTEN}"><Sequence>${body}</Sequence></BehaviorTree>`,
        ),
      }),
    ).diagnostics;
  const conflict = load(
    `<GetParameterInt64 param="n" value="{k}"/><GetParameter param="t" value="{k}"/>`,
  );
  allBounded(conflict.map((d) => d.message));
  pathsBounded(conflict, `${root}/GetParameter[1]`);
  const unwritten = load(`<CallDevice device_handle="a/b" function_name="{never}"/>`);
  allBounded(unwritten.map((d) => d.message));
  pathsBounded(unwritten, `${root}/CallDevice[0]`);

  // A SubTree's handle a tree reads: its path names the SubTree's tree, cut.
  const handles = verifyMain(
    xmlRoot(
      `<BehaviorTree ID="Main"><SubTree ID="${WRITTEN}" h="nohandle"/></BehaviorTree>\n` +
        `<BehaviorTree ID="${WRITTEN}"><CallDevice device_handle="{h}" function_name="f"/>` +
        `</BehaviorTree>`,
      "Main",
    ),
  );
  allBounded(handles.map((d) => d.message));
  pathsBounded(handles, `Main/SubTree[0]/${namedCut(TEXT)}/CallDevice[0]`);
});

Deno.test("A SubTree cycle of many trees names MAX_NAMED_IN_WARNING of them and counts the rest", () => {
  const n = MAX_NAMED_IN_WARNING + 30;
  const trees = Array.from(
    { length: n },
    (_, i) => `<BehaviorTree ID="T${i}"><SubTree ID="T${(i + 1) % n}"/></BehaviorTree>`,
  ).join("\n");
  const diagnostics = verifyMain(xmlRoot(trees, "T0"));
  const cycle = diagnostics.map((d) => d.message).filter((m) => m.startsWith("SubTree recursion"));
  equal(cycle.length, 1);
  const named = Array.from({ length: MAX_NAMED_IN_WARNING }, (_, i) => `T${i}`).join(" -> ");
  equal(cycle[0], `SubTree recursion: ${named} -> (30 more) -> T0`);
});
