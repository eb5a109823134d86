/**
 * An init script (page.addInitScript) that can hold the page's event stream, so that an event is
 * delivered after an API answer (the answer overtook the stream): a wrapper around the page's
 * fetch of /v0/events passes nothing on while `__streamHeld` is true (everything the runtime sends
 * is read at once and queued, in order); `__resumeStream()` passes the queue on. `__markHeld`
 * turns true once a chunk containing `mark` arrived while held; `__marksParsed` counts the
 * JSON.parse calls without a reviver (as the page's event handler calls it; the API's answers are
 * parsed with one) of a text containing `mark`: the page has read such an event.
 */
export function holdStreamScript(mark: string): string {
  return `(() => {
  const MARK = ${JSON.stringify(mark)};
  const realFetch = globalThis.fetch;
  const text = new TextDecoder();
  const wakers = new Set();
  const wakeAll = () => {
    for (const wake of [...wakers]) wake();
  };
  globalThis.__streamHeld = false;
  globalThis.__markHeld = false;
  globalThis.__marksParsed = 0;
  globalThis.__resumeStream = () => {
    globalThis.__streamHeld = false;
    wakeAll();
  };
  globalThis.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    const url = typeof input === "string" ? input : input.url;
    if (!url.includes("/v0/events") || res.body === null) return res;
    // Everything the runtime sends is read at once; while held, it waits here, in order.
    const reader = res.body.getReader();
    const queue = [];
    let ended = false;
    (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (globalThis.__streamHeld && text.decode(value).includes(MARK)) {
            globalThis.__markHeld = true;
          }
          queue.push(value);
          wakeAll();
        }
      } catch {
        // the page ended the stream
      }
      ended = true;
      wakeAll();
    })();
    const body = new ReadableStream({
      async pull(controller) {
        for (;;) {
          if (!globalThis.__streamHeld && queue.length > 0) return controller.enqueue(queue.shift());
          if (ended && queue.length === 0) return controller.close();
          await new Promise((resolve) => {
            const wake = () => {
              wakers.delete(wake);
              resolve();
            };
            wakers.add(wake);
          });
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const parse = JSON.parse;
  JSON.parse = function (source, reviver) {
    if (reviver === undefined && typeof source === "string" && source.includes(MARK)) {
      globalThis.__marksParsed++;
    }
    return parse.call(this, source, reviver);
  };
})()`;
}
