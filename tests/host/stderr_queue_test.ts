/**
 * The process's log lines go to stderr, which a service may point at a file on the data disk
 * (`StandardError=append:...`, `2>>runtime.log`). A full or failing disk makes each write fail
 * (ENOSPC, EIO) for a while: the lines of that spell are dropped and counted, and logging goes on
 * once the disk takes writes again, the first line after it saying how many were lost. Only a
 * stderr that is gone (a broken pipe, a closed descriptor) ends logging for good.
 */
import assert from "node:assert/strict";
import { StderrQueue } from "../../src/host/mod.ts";

const decoder = new TextDecoder();

/** A stderr whose writes fail (as on a full disk) while `fail` is set; the text it took. */
function fakeStderr() {
  const s = {
    fail: null as Error | null,
    text: "",
    write: (bytes: Uint8Array): Promise<number> => {
      if (s.fail !== null) return Promise.reject(s.fail);
      s.text += decoder.decode(bytes);
      return Promise.resolve(bytes.length);
    },
  };
  return s;
}

/** Lets the queue's asynchronous writes run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

Deno.test("StderrQueue writes again once a full disk takes writes, and says how many lines it dropped", async () => {
  const stderr = fakeStderr();
  const queue = new StderrQueue(stderr.write);
  const said: { count: number; reason: string | null }[] = [];
  queue.onDropped = (count, reason) => said.push({ count, reason });
  queue.push("one", "info");
  await settle();
  assert.equal(stderr.text, "one\n");

  stderr.fail = new Error("No space left on device (os error 28)");
  for (const line of ["two", "three", "four"]) {
    queue.push(line, "warn");
    await settle();
  }
  assert.equal(stderr.text, "one\n");

  stderr.fail = null;
  queue.push("five", "info");
  await settle();
  assert.equal(stderr.text, "one\nfive\n", "logging goes on once the disk takes writes again");
  assert.equal(said.length, 1);
  assert.equal(said[0]!.count, 3);
  assert.match(said[0]!.reason ?? "", /No space left on device/);
});

Deno.test("StderrQueue stops for good when stderr is gone (a broken pipe)", async () => {
  const stderr = fakeStderr();
  let calls = 0;
  const queue = new StderrQueue((bytes) => {
    calls++;
    return stderr.write(bytes);
  });
  stderr.fail = new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
  queue.push("one", "info");
  await settle();
  stderr.fail = null;
  queue.push("two", "info");
  await settle();
  assert.equal(calls, 1, "no write after the pipe broke");
  assert.equal(stderr.text, "");
});
