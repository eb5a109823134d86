/**
 * A byte stream (`type: "bytes"`, like Deno's stdio and child pipes) delivering `source`: into
 * the reader's BYOB view when it offers one (split across reads when the view is smaller), else
 * as enqueued chunks. Every BYOB view it was offered is recorded (its length) in `byobViews`.
 * `source` is a list of chunks (served synchronously) or a live stream (a child's pipe seen
 * through this one). With `autoAllocateChunkSize` a default reader is offered views of that size,
 * as Deno's own pipes do (64 KiB).
 */
export function byteStream(
  source: Uint8Array[] | ReadableStream<Uint8Array>,
  byobViews: number[] = [],
  autoAllocateChunkSize?: number,
): ReadableStream<Uint8Array> {
  const live = Array.isArray(source) ? null : source.getReader();
  const queue: Uint8Array[] = Array.isArray(source) ? source.map((c) => c.slice()) : [];
  const deliver = (controller: ReadableByteStreamController, next: Uint8Array | undefined) => {
    const request = controller.byobRequest;
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
  };
  return new ReadableStream({
    type: "bytes",
    ...(autoAllocateChunkSize === undefined ? {} : { autoAllocateChunkSize }),
    pull(controller) {
      const next = queue.shift();
      if (next !== undefined || live === null) return deliver(controller, next);
      return live.read().then((r) => deliver(controller, r.done ? undefined : r.value));
    },
    cancel: (reason) => live?.cancel(reason),
  });
}
