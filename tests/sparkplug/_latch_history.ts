/**
 * What the tests of an e-stop latched and cleared before the node's first births share
 * (unborn_estop_test.ts, unborn_before_start_test.ts): a node metric's values with is_historical
 * as the host received them, and the births' latch read once the host has everything the births
 * sent.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { waitFor } from "../helpers/kernel.ts";
import type { Received, SparkplugHost } from "../helpers/sparkplug_host.ts";

/** The node metric of the e-stop latch. */
export const LATCHED = "Runtime/Estop Latched";

/**
 * Node metric `name`'s values with is_historical after node `group`/`node`'s NBIRTH, by the
 * NBIRTH's alias.
 */
export function historicalNode(messages: Received[], group: string, node: string, name: string) {
  const birth = messages.find((m) => m.topic === `spBv1.0/${group}/NBIRTH/${node}`);
  const alias = (birth?.payload.metrics ?? []).find((m) => m.name === name)?.alias;
  if (alias === undefined) return [];
  return messages.filter((m) => m.topic === `spBv1.0/${group}/NDATA/${node}`)
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === alias && x.is_historical === true)
    .map((x) => ({ value: x.boolean_value ?? x.string_value, t: Number(x.timestamp) }));
}

/**
 * Waits for the node's NBIRTH (asserting it carries the latch clear), then latches again: that
 * live NDATA is published after what the births sent (all QoS 0, one connection: the broker keeps
 * their order), so once the host has it, it has everything before. Resolves with the NBIRTH's
 * time and the latch's history as the host received it.
 */
export async function latchHistoryAfterBirths(
  rt: Kernel,
  host: SparkplugHost,
  group: string,
  node: string,
): Promise<{ born: number; history: ReturnType<typeof historicalNode> }> {
  const nbirth = await waitFor(
    "NBIRTH",
    () => host.messages.find((m) => m.topic === `spBv1.0/${group}/NBIRTH/${node}`),
  );
  const latched = (nbirth.payload.metrics ?? []).find((m) => m.name === LATCHED);
  assert.equal(latched?.boolean_value, false, "the births carry the latch as it is now");
  await rt.estop.trigger("after the births");
  await waitFor(
    "the live NDATA of the second latch",
    () =>
      host.messages.some((m) =>
        m.topic === `spBv1.0/${group}/NDATA/${node}` &&
        (m.payload.metrics ?? []).some((x) =>
          x.is_historical !== true && x.boolean_value === true && x.alias === latched?.alias
        )
      ),
  );
  return {
    born: Number(nbirth.payload.timestamp),
    history: historicalNode(host.messages, group, node, LATCHED),
  };
}
