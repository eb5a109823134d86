/**
 * Every answer a test gets from a runtime is checked against GET /v0/openapi.json's document
 * (src/http/openapi.ts, the same build the runtime serves): the status must be documented for
 * the operation, the content type must be the documented one, and a JSON body must match the
 * documented schema. A mismatch fails the test that got it, naming the method, path, status and
 * the schema error. Paths outside /v0 (the console) and /metrics are not API answers.
 *
 * The document's objects are open (src/http/response_schemas.ts: a client must allow members it
 * does not know), but ours must each be described: the checker closes every object schema that
 * lists its members and says nothing of others (`additionalProperties: false` in its own copy),
 * so an answer member the document does not describe fails the test that got it.
 *
 * Used by HttpFixture.request (tests/helpers/runtime_fixture.ts) and by `apiFetch` (every test
 * that fetches from a runtime over a socket).
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument } from "../../src/http/openapi.ts";
import { ROUTES } from "../../src/http/routes.ts";

const DOC_ID = "urn:hwrt:openapi";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The document and its compiled schemas, made on first use (one per test module). */
class DocumentChecker {
  readonly doc: Json = openApiDocument(ROUTES);
  readonly #ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly #paths: { re: RegExp; template: string }[];

  constructor() {
    // The whole document is the schema resource: `#/components/schemas/X` refs resolve in it.
    this.#ajv.addSchema({ ...closedObjects(this.doc), $id: DOC_ID });
    this.#paths = Object.keys(this.doc.paths).map((template) => ({
      template,
      re: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    }));
  }

  /** The path template a request path falls under, or null. */
  template(path: string): string | null {
    return this.#paths.find((p) => p.re.test(path))?.template ?? null;
  }

  /** Validates `value` against the schema at a JSON pointer of the document. */
  check(pointer: string, value: unknown): string {
    let v = this.#compiled.get(pointer);
    if (v === undefined) {
      v = this.#ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
      this.#compiled.set(pointer, v);
    }
    if (v(value)) return "";
    return (v.errors ?? []).slice(0, 5).map((e) =>
      `${e.instancePath || "/"} ${e.message}` +
      (e.keyword === "additionalProperties"
        ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
        : "")
    ).join("; ");
  }

  /** Follows a `$ref` to components (`#/components/responses/X`). */
  resolve(node: Json): { node: Json; pointer: string | null } {
    if (node?.$ref === undefined) return { node, pointer: null };
    const pointer = String(node.$ref).slice(1);
    let at: Json = this.doc;
    for (const part of pointer.split("/").slice(1)) at = at?.[part];
    return { node: at, pointer };
  }
}

/**
 * A copy of the document whose object schemas that list their members (`properties`) and say
 * nothing of others (no `additionalProperties`) refuse any other member.
 */
export function closedObjects(doc: Json): Json {
  const close = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(close);
    if (node === null || typeof node !== "object") return node;
    const out: Json = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, close(v)]));
    if (isSchemaObject(node) && node.additionalProperties === undefined) {
      out.additionalProperties = false;
    }
    return out;
  };
  return { ...doc, components: close(doc.components), paths: close(doc.paths) };
}

/** A schema that lists the members of an object (not a map of names, as `properties` itself is). */
function isSchemaObject(node: Json): boolean {
  return typeof node.properties === "object" && node.properties !== null &&
    (node.type === "object" || node.required !== undefined);
}

let checker: DocumentChecker | null = null;
function documentChecker(): DocumentChecker {
  return checker ??= new DocumentChecker();
}

/** One answer as a test got it. */
export interface ApiAnswer {
  readonly method: string;
  /** The request path (a query is ignored). */
  readonly path: string;
  readonly status: number;
  readonly contentType: string | null;
  /** The body text (ignored for HEAD and event streams). */
  readonly body: string;
}

/** What is wrong with an answer by the document ("" when nothing). */
export function apiAnswerProblem(a: ApiAnswer): string {
  const path = a.path.split("?")[0];
  if (!path!.startsWith("/v0/") && path !== "/metrics") return ""; // the console's files
  if (a.method === "OPTIONS") return ""; // CORS preflight: no body, not an operation
  const c = documentChecker();
  const method = a.method === "HEAD" ? "get" : a.method.toLowerCase();
  const template = c.template(path!);
  const op = template === null ? undefined : c.doc.paths[template][method];
  const media = ((a.contentType ?? "").split(";")[0])!.trim();
  if (op === undefined) {
    // No such operation: only an error envelope may answer (404 Route not found, or a refusal
    // before routing: 401, 403, 503).
    if (a.status < 400) return `status ${a.status} for a path/method the document does not have`;
    if (a.method === "HEAD") return "";
    if (media !== "application/json") return `content-type ${a.contentType} (expected JSON)`;
    const schema = a.status === 401 ? "UnauthorizedResponse" : "ErrorResponse";
    return c.check(`/components/schemas/${schema}`, parse(a.body));
  }
  const declared = op.responses[String(a.status)];
  if (declared === undefined) {
    return `status ${a.status} is not documented for ${method.toUpperCase()} ${template} ` +
      `(documented: ${Object.keys(op.responses).join(", ")})`;
  }
  const { node: response, pointer } = c.resolve(declared);
  const content = response?.content as Record<string, Json> | undefined;
  if (content === undefined) return "";
  if (!(media in content)) {
    return `content-type ${a.contentType}, documented: ${Object.keys(content).join(", ")}`;
  }
  if (a.method === "HEAD" || media !== "application/json") return "";
  const schemaPointer = pointer !== null
    ? `${pointer}/content/application~1json/schema`
    : `/paths/${
      template!.replaceAll("~", "~0").replaceAll("/", "~1")
    }/${method}/responses/${a.status}/content/application~1json/schema`;
  return c.check(schemaPointer, parse(a.body));
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return Symbol("not JSON");
  }
}

/** Throws, naming the request, status and schema error, when an answer breaks the document. */
export function assertApiAnswer(a: ApiAnswer): void {
  const problem = apiAnswerProblem(a);
  if (problem !== "") {
    throw new Error(
      `answer does not match GET /v0/openapi.json: ${a.method} ${a.path} -> ${a.status}: ` +
        `${problem}\nbody: ${a.body.slice(0, 2000)}`,
    );
  }
}

/**
 * `fetch` for requests to a runtime: the answer is checked by assertApiAnswer before it is
 * returned (its body is still unread: a clone was read). An event stream is checked by status
 * and content type only (its body never ends).
 */
export async function apiFetch(
  input: string | URL,
  init?: RequestInit & { client?: Deno.HttpClient },
): Promise<Response> {
  const res = await fetch(input, init);
  const method = (init?.method ?? "GET").toUpperCase();
  const path = new URL(String(input)).pathname;
  const contentType = res.headers.get("content-type");
  const streaming = (contentType ?? "").startsWith("text/event-stream");
  const body = method === "HEAD" || streaming ? "" : await res.clone().text();
  try {
    assertApiAnswer({ method, path, status: res.status, contentType, body });
  } catch (err) {
    await res.body?.cancel().catch(() => {});
    throw err;
  }
  return res;
}
