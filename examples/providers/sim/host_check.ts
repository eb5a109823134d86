import type { HostRequirement } from "../../../src/provider_sdk/mod.ts";
import type { SimConfig } from "./config.ts";

/**
 * The simulator's host requirements (executable profile sec. 6): one per `host.device_nodes` entry,
 * id `device_node:<path>`, met when the node exists and can be opened for reading. Read-only: a
 * file, character or block device is opened and closed again, nothing is read; a FIFO or socket is
 * only looked at (opening a FIFO would wait for a writer). With no device nodes configured there
 * is nothing to check: `[]`.
 */
export async function checkSimHost(config: SimConfig): Promise<HostRequirement[]> {
  const out: HostRequirement[] = [];
  for (const path of config.deviceNodes) out.push(await checkNode(path));
  return out;
}

async function checkNode(path: string): Promise<HostRequirement> {
  const id = `device_node:${path}`;
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      return {
        id,
        status: "unmet",
        detail: `${path} does not exist`,
        remedy: `create ${path} (on real hardware: enable the bus and load its driver), ` +
          "or remove it from host.device_nodes",
      };
    }
    return { id, status: "unknown", detail: `cannot inspect ${path}: ${message(err)}` };
  }
  if (info.isDirectory) {
    return {
      id,
      status: "unmet",
      detail: `${path} is a directory, not a device node`,
      remedy: `point host.device_nodes at the node itself`,
    };
  }
  if (!(info.isFile || info.isCharDevice || info.isBlockDevice)) {
    return { id, status: "met", detail: `${path} exists (not opened: a FIFO or socket)` };
  }
  try {
    const f = await Deno.open(path, { read: true });
    f.close();
  } catch (err) {
    if (err instanceof Deno.errors.PermissionDenied) {
      const mode = info.mode === null ? "" : ` (mode ${(info.mode & 0o7777).toString(8)})`;
      return {
        id,
        status: "unmet",
        detail: `${path} cannot be opened for reading: permission denied${mode}`,
        remedy: `give the user the provider runs as read access to ${path} ` +
          "(e.g. add it to the group that owns the node), then restart the provider",
      };
    }
    return { id, status: "unknown", detail: `cannot open ${path}: ${message(err)}` };
  }
  return { id, status: "met", detail: `${path} exists and can be opened for reading` };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
