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
