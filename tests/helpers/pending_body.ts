import type { Kernel } from "../../src/app/kernel.ts";
import { waitFor } from "./kernel.ts";

/**
 * A request body the test sends when it chooses: `reading()` turns true once the server asks for
 * its first bytes (the request passed every check made on its head), `send(text)` ends it.
 */
export function pendingBody(): {
  body: ReadableStream<Uint8Array>;
  reading: () => boolean;
  send: (text: string) => void;
} {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    pull: () => void (pulled = true),
  }, { highWaterMark: 0 });
  return {
    body,
    reading: () => pulled,
    send: (text) => {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  };
}

/** What the API answered: its status and its JSON body. */
export interface ApiAnswer {
  status: number;
  body: { status: { code: string; message: string } };
}

/**
 * A POST to `path` of `rt`'s API whose body the test sends when it chooses (pendingBody), once the
 * server reads it and has routed it (`rt.api.inFlight` > 0): a stop begun now answers it in its
 * HTTP drain, not 503. `what` names the request in the waits ("request", "call").
 */
export async function routedPost(
  rt: Kernel,
  path: string,
  what = "request",
): Promise<{ answer: Promise<ApiAnswer>; send: (text: string) => void }> {
  const request = pendingBody();
  const answer = fetch(`http://127.0.0.1:${rt.http!.port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: request.body,
  }).then(async (r) => ({ status: r.status, body: await r.json() }));
  await waitFor(`the ${what}'s body being read`, () => request.reading());
  await waitFor(`the ${what} routed by the server`, () => rt.api.inFlight > 0);
  return { answer, send: request.send };
}
