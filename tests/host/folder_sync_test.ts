/**
 * FolderSync (syncFolderOf): a folder fsync that fails leaves the rename standing, but is counted
 * and said once (WARN, level first), so a disk that cannot sync is visible.
 */
import assert from "node:assert/strict";
import { FolderSync } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

Deno.test("FolderSync counts every failed folder fsync and says the first once, at WARN", async () => {
  const { lines, log } = capturingLogger({ now: () => 0 });
  const opened: string[] = [];
  const sync = new FolderSync({
    open: (dir) => {
      opened.push(dir);
      return Promise.resolve({
        sync: () => Promise.reject(new Error("Input/output error (os error 5)")),
        close: () => {},
      });
    },
    log,
  });
  await sync.sync("/data/runs/runs.jsonl");
  await sync.sync("/data/sparkplug/bdseq");
  assert.deepEqual(opened, ["/data/runs", "/data/sparkplug"]);
  assert.equal(sync.failures, 2);
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(lines[0]!, /^WARN /);
  assert.match(lines[0]!, /folder fsync failed for \/data\/runs: Input\/output error/);
});

Deno.test("FolderSync says a failure from before its logger was given once the logger is", async () => {
  const sync = new FolderSync({ open: () => Promise.reject(new Error("Permission denied")) });
  await sync.sync("/nowhere/file");
  const { lines, log } = capturingLogger({ now: () => 0 });
  sync.setLog(log);
  await sync.sync("/nowhere/file");
  assert.equal(sync.failures, 2);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^WARN .*folder fsync failed for \/nowhere: Permission denied/);
});

Deno.test("FolderSync syncs a real folder without a failure", async () => {
  const dir = await Deno.makeTempDir({ prefix: "folder-sync-" });
  try {
    const { lines, log } = capturingLogger({ now: () => 0 });
    const sync = new FolderSync({ log });
    await sync.sync(`${dir}/file`);
    assert.equal(sync.failures, 0);
    assert.deepEqual(lines, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
