/**
 * A byte stream (`type: "bytes"`, like Deno's stdio and child pipes) delivering `chunks`: into
 * the reader's BYOB view when it offers one (split across reads when the view is smaller), else
 * as enqueued chunks. Every BYOB view it was offered is recorded (its length) in `byobViews`.
 */
export function byteStream(
  chunks: Uint8Array[],
  byobViews: number[] = [],
): ReadableStream<Uint8Array> {
  const queue = chunks.map((c) => c.slice());
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const request = controller.byobRequest;
      const next = queue.shift();
      if (next === undefined) {
        controller.close();
        request?.respond(0);
        return;
      }
      if (request === null || request.view === null) {
        controller.enqueue(next);
        return;
      }
      const view = request.view as Uint8Array;
      byobViews.push(view.byteLength);
      const n = Math.min(view.byteLength, next.length);
      view.set(next.subarray(0, n));
      if (n < next.length) queue.unshift(next.subarray(n));
      request.respond(n);
    },
  });
}
