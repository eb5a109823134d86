/**
 * The fleet view (`runtime --fleet URL`, docs/sparkplug.md): the edge nodes of a broker as their
 * births, data and deaths describe them, read for a bounded time. Births are not retained in
 * Sparkplug, so a node seen only through its data is asked for a rebirth (NCMD
 * `Node Control/Rebirth`, once); a node that publishes nothing in the window is not seen, nor is
 * one through a retained copy or a command a host sends it.
 */
import type { Clock, Logger } from "../common/mod.ts";
import { errorMessage, escapeControl, providerTextWithin, readClockTwice } from "../common/mod.ts";
import { NODE_METRICS } from "./edge_node.ts";
import type { MqttConnect, MqttSessionOptions } from "../common/mod.ts";
import { decode, encode, NAMESPACE, parseTopic, topicOf } from "./payloads.ts";

/** One edge node as the fleet view saw it. */
export interface FleetNode {
  readonly group: string;
  readonly node: string;
  /**
   * False once its NDEATH (of the bdSeq of its last birth) was seen. Null: unknown, the view's
   * session on the broker was lost (a broker restarted without persistence: a node that died
   * meanwhile published no NDEATH) and the node has not published since; it is asked for a
   * Rebirth.
   */
  reachable: boolean | null;
  /**
   * Whether a birth was seen (else only data: the metrics below are unknown). The metrics are of
   * the last birth seen and the data since (after a lost session: of before it, till a new birth).
   */
  born: boolean;
  /** Of its last birth; null: none seen, or it was before the view's session was lost. */
  bdSeq: number | null;
  mode: string | null;
  estopLatched: boolean | null;
  alarmsActive: number | null;
  alarmsUnacked: number | null;
  providersUp: number | null;
  providersDown: number | null;
  version: string | null;
  /**
   * The highest `Sparkplug/Foreign Births` its births and data carried in the window: NBIRTHs of
   * its group and node id that the node did not publish (above 0: another client publishes as it,
   * a copied configuration). The highest, not the last: each copy publishes its own count under
   * the one node id, and a birth of the copy that heard none does not take back the other's.
   * Null: none seen (not born yet, or a runtime that does not publish it).
   */
  foreignBirths: number | null;
  devices: number;
}

export interface FleetOptions {
  readonly url: string;
  /** A group id, or null for every group. */
  readonly group: string | null;
  /** How long to listen (bounded: 100 ms .. 60 s). */
  readonly waitMs: number;
  readonly connect: MqttConnect;
  readonly clock: Clock;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** Told after each message that changed what is known of a node. */
  readonly onUpdate?: (node: Readonly<FleetNode>) => void;
  /**
   * Ends the window early once aborted (Ctrl-C, SIGTERM): the view returns what it saw so far,
   * `interrupted` true, after discarding its session on the broker as at the window's end.
   */
  readonly interrupt?: AbortSignal | undefined;
  /**
   * Told the view's MQTT client id (`fleet-view-<uuid>`, this run's own) before it connects: what
   * names its session on the broker (a process ended before discarding it says which is left).
   */
  readonly onClientId?: (clientId: string) => void;
  /**
   * Where a node's messages refused over MAX_FLEET_MESSAGE_BYTES are WARNed (bounded:
   * FLEET_OVERSIZE_WARN_FACTOR, MAX_FLEET_OVERSIZE_NODES_WARNED); none: only counted.
   */
  readonly log?: Logger | undefined;
}

/** What the fleet view saw in its window. */
export interface FleetResult {
  /** Every node seen, sorted by group and node. */
  readonly nodes: FleetNode[];
  /**
   * More nodes, devices or metric aliases than the view tracks (MAX_FLEET_NODES,
   * MAX_FLEET_DEVICES, MAX_FLEET_ALIASES_PER_NODE, MAX_FLEET_ALIASES): the list is cut, or a
   * node's metrics sent by an alias past the bound are not read (left as they were).
   */
  readonly truncated: boolean;
  /** The window was ended early (FleetOptions.interrupt): the nodes seen until then. */
  readonly interrupted: boolean;
  /**
   * Node messages refused unread in the window, over MAX_FLEET_MESSAGE_BYTES: a node seen only
   * through them is not listed, and one listed is not changed by them.
   */
  readonly refusedOversize: number;
}

/** Nodes the fleet view tracks at most (a broker with more is cut there, said in `truncated`). */
export const MAX_FLEET_NODES = 10000;
/**
 * Device ids the fleet view tracks at most, over all nodes (a node's count is its devices born
 * now, by id); beyond it new ids are not counted, said in `truncated`.
 */
export const MAX_FLEET_DEVICES = 100000;

/**
 * Metric aliases the fleet view keeps for one node, at most. It keeps only those of the node
 * metrics it reads (FLEET_READ_METRICS: nine names; a node of this runtime defines one alias each
 * in its NBIRTH), from the node's latest NBIRTH and its NDATA, so an honest node of any make stays
 * far below it; a node whose births define more (a hostile or broken one, millions of tiny
 * aliases) has the rest not kept, said in `truncated`: its NDATA by those aliases are not read.
 */
export const MAX_FLEET_ALIASES_PER_NODE = 64;
/**
 * Metric aliases the fleet view keeps over all nodes, at most (beyond it new ones are not kept,
 * said in `truncated`): MAX_FLEET_NODES nodes of this runtime with one alias per node metric read.
 */
export const MAX_FLEET_ALIASES = 10 * MAX_FLEET_NODES;

/**
 * Largest message of a node the fleet view reads, in bytes of the Sparkplug payload: a larger one
 * is refused before it is decoded, counted (FleetResult.refusedOversize) and WARNed
 * (FLEET_OVERSIZE_WARN_FACTOR), since only the broker bounds what arrives (Mosquitto's default is
 * some 256 MB) and one node on a shared broker publishing MiBs at a high rate otherwise has the
 * view decode all of it, for the few node metrics it keeps. Above anything this runtime's edge
 * node publishes, measured: an NBIRTH is some 400 bytes (the node metrics only); the largest
 * DBIRTH, of a device at MAX_SIGNALS_PER_DEVICE signals and MAX_FUNCTIONS_PER_DEVICE functions
 * (src/providers/provider_session.ts), is 889,730 bytes with 64-character ids, 80-character
 * descriptions and 4 described arguments per function, 1,219,286 bytes with 30 short arguments
 * per function. A DBIRTH beyond it takes a DescribeDevice answer near its 1 MiB frame
 * (MAX_FRAME_BYTES) of tiny arguments, or signals holding long strings: refused and said all the
 * same, that device not counted.
 */
export const MAX_FLEET_MESSAGE_BYTES = 4 * 1024 * 1024;
/**
 * A node's messages refused over MAX_FLEET_MESSAGE_BYTES are WARNed at its 1st, 10th, 100th, ...
 * (each count this factor times the last said): a node publishing them at a high rate for the
 * whole window (60 s at most) is a handful of lines, not one per message.
 */
export const FLEET_OVERSIZE_WARN_FACTOR = 10;
/**
 * Nodes whose refused messages are WARNed, at most (one line then says the further nodes' are
 * counted, not logged): the per-node counts the WARNs need are kept for these only.
 */
export const MAX_FLEET_OVERSIZE_NODES_WARNED = 64;

/** The node metrics the fleet view reads: only their aliases are kept (MAX_FLEET_ALIASES_PER_NODE). */
const FLEET_READ_METRICS: ReadonlySet<string> = new Set([
  NODE_METRICS.bdSeq,
  NODE_METRICS.mode,
  NODE_METRICS.latched,
  NODE_METRICS.alarmsActive,
  NODE_METRICS.alarmsUnacked,
  NODE_METRICS.providersUp,
  NODE_METRICS.providersDown,
  NODE_METRICS.version,
  NODE_METRICS.foreignBirths,
]);

/**
 * How long the fleet view waits for the births of a node it asked for a Rebirth before asking it
 * again; each wait doubles, up to REBIRTH_RETRY_MAX_MS. The NCMD goes at QoS 0 (Sparkplug B 3.0,
 * tck-id-topics-ncmd-mqtt: "NCMD messages MUST be published with MQTT QoS equal to 0"), so a copy
 * lost on the way (the broker restarting, the node reconnecting just then) is lost for good: only
 * asking again gets the births.
 */
export const REBIRTH_RETRY_FIRST_MS = 1000;
/** The longest wait between two Rebirths asked of one node (the backoff's ceiling). */
export const REBIRTH_RETRY_MAX_MS = 8000;
/**
 * Rebirths asked of one node at most, the first included (at 0, 1, 3, 7 and 15 s): a node that
 * answers none (a Sparkplug node of another make that ignores it) is then left unborn, and no
 * longer holds one of the MAX_REBIRTHS_PENDING places once the last wait is over.
 */
export const REBIRTH_ASKS_PER_NODE = 5;
/**
 * Nodes asked for a Rebirth whose births have not come yet, at most at once (a broker of thousands
 * of nodes, each seen through its data: the view does not have every one publish all its births
 * at the same moment); the others wait their turn in the order they were seen, asked as births
 * come, nodes die or give up.
 */
export const MAX_REBIRTHS_PENDING = 100;

/**
 * The message types an edge node publishes itself: only these show a node. An NCMD or DCMD is
 * published to it by a host (a Rebirth asked of a node that crashed, a command left retained on
 * the broker), whether or not the node is there.
 */
const PUBLISHED_BY_NODES: ReadonlySet<string> = new Set([
  "NBIRTH",
  "NDATA",
  "NDEATH",
  "DBIRTH",
  "DDATA",
  "DDEATH",
]);

/** Listens for `waitMs` and returns what it saw, sorted by group and node. */
export async function collectFleet(o: FleetOptions): Promise<FleetResult> {
  const nodes = new Map<string, FleetNode>();
  const aliases = new Map<string, Map<number, string>>();
  /** Nodes asked for a Rebirth and not born yet: how many times, and the timer of the next. */
  const asking = new Map<string, { asks: number; timer: unknown }>();
  /** Nodes to ask once a place among MAX_REBIRTHS_PENDING is free, in the order seen. */
  const waiting = new Set<string>();
  /** Nodes asked REBIRTH_ASKS_PER_NODE times without an answer: not asked again. */
  const gaveUp = new Set<string>();
  let listening = true;
  /** Each node's devices born now (DBIRTH adds, DDEATH, NBIRTH and NDEATH take away), by device id. */
  const born = new Map<string, Set<string>>();
  let deviceIds = 0;
  /** Aliases kept in `aliases`, over all nodes (MAX_FLEET_ALIASES). */
  let aliasCount = 0;
  let truncated = false;
  /** Messages refused over MAX_FLEET_MESSAGE_BYTES, over all nodes. */
  let refusedOversize = 0;
  /** Per node WARNed (MAX_FLEET_OVERSIZE_NODES_WARNED): its refused messages, the count said next. */
  const refusedBy = new Map<string, { count: number; sayAt: number }>();
  let refusedUnsaid = false;
  const options = {
    url: o.url,
    // This run's own: two views at once do not take each other's session over, and none resumes
    // a session an earlier run left (its NDEATHs, queued since, would read as deaths now).
    clientId: `fleet-view-${crypto.randomUUID()}`,
    keepAliveS: 30,
    connectTimeoutMs: Math.min(10000, Math.max(1000, o.waitMs)),
    reconnectMs: 1000,
    username: o.username,
    password: o.password,
  };
  o.onClientId?.(options.clientId);
  // A persistent session: when the view's connection drops in its window, the broker keeps its
  // subscription and queues what is published at QoS 1 meanwhile -- a node's NDEATH -- for the
  // reconnect (MQTT.js reconnects under the same client id). With a clean session that NDEATH was
  // lost and the dead node listed reachable. Discarded when the window ends (discardSession).
  const session = await o.connect({ ...options, clean: false });
  let wasUp = false;
  const connected = new Promise<void>((resolve) =>
    session.onConnect((sessionPresent) => {
      // A reconnect to a broker that lost the view's session (restarted without persistence):
      // whatever was published meanwhile is lost -- a node that died then published no NDEATH,
      // its will gone with the broker -- so what the view knew of each node is no longer known.
      if (wasUp && !sessionPresent) sessionLost();
      wasUp = true;
      resolve();
    })
  );
  const askRebirth = (key: string): void => {
    const n = nodes.get(key)!;
    const a = asking.get(key) ?? { asks: 0, timer: undefined };
    asking.set(key, a);
    a.asks++;
    // An NCMD carries its time (Sparkplug 3.0): a wall clock that fails (twice) leaves this ask
    // out (no invented time; the view has no log), and the retry below asks again, within
    // REBIRTH_ASKS_PER_NODE.
    const now = readClockTwice(() => o.clock.nowMs(), undefined, "fleet view", "a Rebirth ask");
    if (now !== null) {
      session.publish(
        topicOf(n.group, "NCMD", n.node),
        encode({
          timestamp: now,
          metrics: [{ name: NODE_METRICS.rebirth, datatype: 11, boolean_value: true }],
        }),
        0,
      ).catch(() => {});
    }
    const wait = Math.min(REBIRTH_RETRY_MAX_MS, REBIRTH_RETRY_FIRST_MS * 2 ** (a.asks - 1));
    a.timer = o.clock.setTimer(
      () => (a.asks < REBIRTH_ASKS_PER_NODE ? askRebirth(key) : stopAsking(key, true)),
      wait,
    );
  };
  /**
   * No more Rebirths for this node (born, dead, or it answered none); the next one waiting is
   * asked.
   */
  const stopAsking = (key: string, unanswered: boolean): void => {
    waiting.delete(key);
    const a = asking.get(key);
    if (a === undefined) return;
    o.clock.clearTimer(a.timer);
    asking.delete(key);
    if (unanswered) gaveUp.add(key);
    for (const next of waiting) {
      if (!listening || asking.size >= MAX_REBIRTHS_PENDING) break;
      waiting.delete(next);
      askRebirth(next);
    }
  };
  /** A node seen unborn: asked for its births now, or once a place is free. */
  const wantBirth = (key: string): void => {
    if (!listening || asking.has(key) || waiting.has(key) || gaveUp.has(key)) return;
    if (asking.size < MAX_REBIRTHS_PENDING) askRebirth(key);
    else waiting.add(key);
  };
  /**
   * Every node's state unknown until it publishes again (alive) or is born again (asked for a
   * Rebirth, the same bounded retry): a node that died while the broker was down stays unknown.
   */
  const sessionLost = (): void => {
    for (const [key, n] of nodes) {
      n.reachable = null;
      // Its next NDEATH is of a session this view did not see born: any bdSeq is its death now.
      n.bdSeq = null;
      o.onUpdate?.(n);
      wantBirth(key);
    }
  };
  /**
   * A node's message over MAX_FLEET_MESSAGE_BYTES: not decoded, so nothing of it is known (it
   * lists no node and changes none, as a payload that does not decode); counted, and WARNed at
   * the node's 1st, 10th, 100th... (FLEET_OVERSIZE_WARN_FACTOR), for so many nodes at most.
   */
  const refuseOversize = (t: NonNullable<ReturnType<typeof parseTopic>>, bytes: number): void => {
    refusedOversize++;
    const key = `${t.groupId}/${t.edgeNodeId}`;
    let r = refusedBy.get(key);
    if (r === undefined) {
      if (refusedBy.size >= MAX_FLEET_OVERSIZE_NODES_WARNED) {
        if (!refusedUnsaid) {
          refusedUnsaid = true;
          o.log?.warn(
            `fleet view: messages over MAX_FLEET_MESSAGE_BYTES (${MAX_FLEET_MESSAGE_BYTES}) from ` +
              `more than ${MAX_FLEET_OVERSIZE_NODES_WARNED} nodes (MAX_FLEET_OVERSIZE_NODES_WARNED)` +
              `: the further nodes' are counted (refusedOversize), not logged`,
          );
        }
        return;
      }
      r = { count: 0, sayAt: 1 };
      refusedBy.set(key, r);
    }
    if (++r.count < r.sayAt) return;
    r.sayAt *= FLEET_OVERSIZE_WARN_FACTOR;
    const device = t.deviceId === null ? "" : ` (device ${quoted(t.deviceId)})`;
    o.log?.warn(
      `fleet view: edge node ${quoted(t.edgeNodeId)} (group ${quoted(t.groupId)}): ${t.type}` +
        `${device} of ${bytes} bytes refused unread, over MAX_FLEET_MESSAGE_BYTES ` +
        `(${MAX_FLEET_MESSAGE_BYTES}); ${r.count} of its messages refused so far (said again at ` +
        `${r.sayAt})`,
    );
  };
  session.onMessage((topic, payload, retained) => {
    // A retained copy (Sparkplug publishes node messages with retain false): the broker hands it
    // to this new subscription whenever it was published, the node perhaps long gone.
    if (retained) return;
    const t = parseTopic(topic);
    if (t === null || (o.group !== null && t.groupId !== o.group)) return;
    // An NCMD or DCMD is a host's, to the node: no sign of the node (it may be long gone).
    if (!PUBLISHED_BY_NODES.has(t.type)) return;
    // Checked before decoding: the bytes are already here (MQTT.js read the packet), the decode of
    // a huge metrics list would not be.
    if (payload.length > MAX_FLEET_MESSAGE_BYTES) return refuseOversize(t, payload.length);
    // A payload that does not decode is no node's: nothing is listed for it.
    let p;
    try {
      p = decode(payload);
    } catch {
      return;
    }
    const key = `${t.groupId}/${t.edgeNodeId}`;
    let n = nodes.get(key);
    if (n === undefined) {
      if (nodes.size >= MAX_FLEET_NODES) {
        truncated = true;
        return;
      }
      n = {
        group: t.groupId,
        node: t.edgeNodeId,
        reachable: true,
        born: false,
        bdSeq: null,
        mode: null,
        estopLatched: null,
        alarmsActive: null,
        alarmsUnacked: null,
        providersUp: null,
        providersDown: null,
        version: null,
        foreignBirths: null,
        devices: 0,
      };
      nodes.set(key, n);
    }
    const names = aliases.get(key) ?? new Map<number, string>();
    aliases.set(key, names);
    /** An alias of a metric the view reads, within the bounds (past them: `truncated`). */
    const keepAlias = (alias: number, name: string): void => {
      if (names.has(alias)) {
        if (FLEET_READ_METRICS.has(name)) names.set(alias, name);
        else {
          names.delete(alias); // now of a metric the view does not read
          aliasCount--;
        }
        return;
      }
      if (!FLEET_READ_METRICS.has(name)) return;
      if (names.size >= MAX_FLEET_ALIASES_PER_NODE || aliasCount >= MAX_FLEET_ALIASES) {
        truncated = true;
        return;
      }
      names.set(alias, name);
      aliasCount++;
    };
    const apply = (metrics: Array<Record<string, unknown>>) => {
      for (const m of metrics) {
        const name = typeof m.name === "string"
          ? m.name
          : typeof m.alias === "number"
          ? names.get(m.alias)
          : undefined;
        if (typeof m.name === "string" && typeof m.alias === "number") keepAlias(m.alias, m.name);
        // Store and forward's replay of what changed while the node was away (after its births,
        // which carry the metrics as they are; a live change may even precede its last ones):
        // history, not the node's state now.
        if (m.is_historical === true) continue;
        switch (name) {
          case NODE_METRICS.bdSeq:
            n!.bdSeq = Number(m.long_value ?? 0);
            break;
          case NODE_METRICS.mode:
            n!.mode = String(m.string_value ?? "");
            break;
          case NODE_METRICS.latched:
            n!.estopLatched = m.boolean_value === true;
            break;
          case NODE_METRICS.alarmsActive:
            n!.alarmsActive = Number(m.int_value ?? 0);
            break;
          case NODE_METRICS.alarmsUnacked:
            n!.alarmsUnacked = Number(m.int_value ?? 0);
            break;
          case NODE_METRICS.providersUp:
            n!.providersUp = Number(m.int_value ?? 0);
            break;
          case NODE_METRICS.providersDown:
            n!.providersDown = Number(m.int_value ?? 0);
            break;
          case NODE_METRICS.version:
            n!.version = String(m.string_value ?? "");
            break;
          case NODE_METRICS.foreignBirths: {
            const count = Number(m.long_value ?? 0);
            if (Number.isFinite(count)) n!.foreignBirths = Math.max(n!.foreignBirths ?? 0, count);
            break;
          }
        }
      }
    };
    const node = n;
    const told = () => o.onUpdate?.(node);
    // A device born again (a DBIRTH without a DDEATH: its description changed) is one device.
    const devices = born.get(key) ?? new Set<string>();
    born.set(key, devices);
    // Dead (its NDEATH seen): what it publishes before its NBIRTH is of a session the view did not
    // see born (asked for below): it stays dead, its metrics its last births', no device born.
    const dead = n.reachable === false;
    switch (t.type) {
      case "NBIRTH":
        n.born = true;
        n.reachable = true;
        deviceIds -= devices.size;
        devices.clear();
        n.devices = 0;
        // A new birth defines the node's aliases anew: one of an earlier birth names nothing now.
        aliasCount -= names.size;
        names.clear();
        apply(p.metrics ?? []);
        stopAsking(key, false);
        told();
        return;
      case "NDATA":
        if (!dead) apply(p.metrics ?? []);
        break;
      case "DBIRTH":
        if (dead) break;
        if (t.deviceId !== null && !devices.has(t.deviceId)) {
          if (deviceIds >= MAX_FLEET_DEVICES) truncated = true;
          else {
            devices.add(t.deviceId);
            deviceIds++;
          }
        }
        n.devices = devices.size;
        break;
      case "DDEATH":
        if (t.deviceId !== null && devices.delete(t.deviceId)) deviceIds--;
        n.devices = devices.size;
        break;
      case "NDEATH": {
        const bd = (p.metrics ?? []).find((m) => m.name === NODE_METRICS.bdSeq);
        if (n.bdSeq === null || bd === undefined || Number(bd.long_value ?? 0) === n.bdSeq) {
          // A dead node's devices are dead with it (none is born now).
          n.reachable = false;
          deviceIds -= devices.size;
          devices.clear();
          n.devices = 0;
          // A Rebirth reaches no dead node: its place goes to the next.
          stopAsking(key, false);
        }
        told();
        return;
      }
    }
    // Unknown (the view's session lost): a node that publishes is alive, in a session it was born
    // in; it was asked for its births, which the view missed.
    if (n.reachable === null) n.reachable = true;
    told();
    // Unborn, or publishing after its NDEATH: it came back with births this view missed (QoS 0,
    // or sent while the view's connection was down, its NDEATH queued for the view and its births
    // not). Until its NBIRTH it stays dead in the table, its metrics those of its last births.
    if (!n.born || n.reachable === false) wantBirth(key);
  });
  let error = "";
  session.onError((m) => (error = m));
  const waitMs = Math.min(60000, Math.max(100, o.waitMs));
  let timer: unknown;
  const timeout = new Promise<"timeout">((
    r,
  ) => (timer = o.clock.setTimer(() => r("timeout"), waitMs)));
  // Ctrl-C or SIGTERM (main.ts): the window ends now, and the session is discarded as at its end
  // (a signal that ended the process left it on the broker, queueing for it for good).
  let onInterrupt = (): void => {};
  const interrupt = new Promise<"interrupted">((r) => (onInterrupt = () => r("interrupted")));
  if (o.interrupt?.aborted) onInterrupt();
  o.interrupt?.addEventListener("abort", onInterrupt);
  let interrupted = false;
  try {
    const up = await Promise.race([connected, timeout, interrupt]);
    if (up === "timeout") {
      throw new Error(`broker not reached within ${waitMs} ms${error ? `: ${error}` : ""}`);
    }
    if (up === "interrupted") throw new Error("interrupted before the broker was reached");
    // QoS 1: a node's NDEATH (its will, published at QoS 1) reaches the view at QoS 1, acknowledged
    // and sent again on the connection, not dropped as a QoS 0 copy may be (a dead node shown
    // reachable). What a node publishes at QoS 0 (its births) comes at QoS 0 all the same.
    // The window's end or an interrupt does not wait for the SUBACK.
    const subscribed = session.subscribe([`${NAMESPACE}/${o.group ?? "+"}/#`], 1)
      .then(() => Promise.race([timeout, interrupt]));
    subscribed.catch(() => {}); // a SUBACK refused after the window ended: nothing to tell
    interrupted = await Promise.race([subscribed, timeout, interrupt]) === "interrupted";
  } catch (err) {
    throw new Error(`fleet view: ${errorMessage(err)}`);
  } finally {
    o.clock.clearTimer(timer);
    o.interrupt?.removeEventListener("abort", onInterrupt);
    listening = false;
    for (const a of asking.values()) o.clock.clearTimer(a.timer);
    asking.clear();
    waiting.clear();
    await session.end(true);
    if (wasUp) await discardSession(o, options);
  }
  const list = [...nodes.values()].sort((a, b) =>
    a.group === b.group ? a.node.localeCompare(b.node) : a.group.localeCompare(b.group)
  );
  return { nodes: list, truncated, interrupted, refusedOversize };
}

/**
 * How long the fleet view waits, once its window is over, for the connection that discards its
 * persistent session on the broker (a CONNECT with Clean Session 1 under its client id, then a
 * DISCONNECT). Beyond it the view ends all the same, and the broker keeps the session, queueing
 * QoS 1 messages for it within its own bounds (Mosquitto: `max_queued_messages`, 1000 by default),
 * until it expires it (Mosquitto: `persistent_client_expiration`, never by default).
 */
export const FLEET_SESSION_DISCARD_MS = 2000;

/** Discards the view's persistent session: connects under its client id with a clean session. */
async function discardSession(
  o: FleetOptions,
  options: Omit<MqttSessionOptions, "clean">,
): Promise<void> {
  let timer: unknown;
  try {
    const discard = await o.connect({
      ...options,
      clean: true,
      connectTimeoutMs: Math.min(options.connectTimeoutMs, FLEET_SESSION_DISCARD_MS),
    });
    const up = await new Promise<boolean>((resolve) => {
      timer = o.clock.setTimer(() => resolve(false), FLEET_SESSION_DISCARD_MS);
      discard.onConnect(() => resolve(true));
      if (discard.connected) resolve(true);
    });
    // Up: a DISCONNECT ends it (the session with it); not up: nothing to wait for.
    await discard.end(!up);
  } catch {
    // Not discarded (the broker gone meanwhile): it keeps the session until it expires it.
  } finally {
    o.clock.clearTimer(timer);
  }
}

/**
 * Longest text of a peer (a group or node id, a node metric such as `Runtime/Mode`) a cell of the
 * fleet table shows: beyond it the text is cut and ends with an ellipsis (`--format json` keeps it
 * whole).
 */
export const FLEET_TEXT_CHARS = 128;

/**
 * A peer's text as a table cell: any client the broker lets publish under the namespace chooses
 * it. Cut to FLEET_TEXT_CHARS, control characters escaped (`\n`, `\x1b`): a newline would forge a
 * row, an escape sequence move the terminal's cursor and erase another node's row.
 */
function cell(text: string): string {
  return escapeControl(providerTextWithin(text, FLEET_TEXT_CHARS));
}

/** A peer's id in a log line: quoted (JSON), cut to FLEET_TEXT_CHARS. */
function quoted(text: string): string {
  return JSON.stringify(providerTextWithin(text, FLEET_TEXT_CHARS));
}

/** The fleet as a text table (one line per node, peers' text escaped: cell()). */
export function fleetTable(nodes: readonly FleetNode[]): string {
  const rows = [[
    "GROUP",
    "NODE",
    "STATE",
    "MODE",
    "LATCH",
    "ALARMS",
    "PROVIDERS",
    "DEVICES",
    "FOREIGN BIRTHS",
  ]];
  for (const n of nodes) {
    rows.push([
      cell(n.group),
      cell(n.node),
      n.reachable === null ? "unknown" : n.reachable ? "reachable" : "dead",
      n.mode === null ? "?" : cell(n.mode),
      n.estopLatched === null ? "?" : n.estopLatched ? "LATCHED" : "-",
      n.alarmsActive === null ? "?" : `${n.alarmsActive} (${n.alarmsUnacked ?? 0} unacked)`,
      n.providersUp === null ? "?" : `${n.providersUp} up, ${n.providersDown ?? 0} down`,
      String(n.devices),
      foreignCell(n.foreignBirths),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

/**
 * The FOREIGN BIRTHS cell: the count, flagged above 0 (another client publishes as this node: a
 * host sees it born again and again, and its commands reach both); `?` when the node published
 * none in the window.
 */
function foreignCell(count: number | null): string {
  if (count === null) return "?";
  return count > 0 ? `${count} SHARED NODE ID` : "0";
}
