/**
 * The runtime as an Eclipse Sparkplug B edge node (docs/sparkplug.md). On every connection:
 * NCMD/DCMD subscriptions, NBIRTH (node metrics and `bdSeq`), one DBIRTH per device of an
 * available provider; NDEATH is the MQTT will, with the `bdSeq` of that connection. Then DDATA by
 * exception from the state cache's events (changed values and qualities only, by alias), NDATA
 * when a node metric changes, DDEATH/DBIRTH as devices leave and return, births again on
 * `Node Control/Rebirth` without reconnecting.
 *
 * With `sparkplug.primary_host_id` it follows that host's STATE (Sparkplug 3.0: retained JSON
 * `{"online": bool, "timestamp": ms}` on `spBv1.0/STATE/<id>`; the older plain `ONLINE`/`OFFLINE`
 * on `STATE/<id>` too): no births until the host is online; when it goes offline, NDEATH, the
 * session ended without DISCONNECT, and a new session (next bdSeq) that waits for it again. A STATE
 * older than one already seen is ignored. Meanwhile data goes to store and forward.
 *
 * Never in the way of the runtime: it only subscribes to the event bus and the inventory, and its
 * listeners queue work and return. Nothing here is awaited by a call, a poll or the e-stop; a
 * broker that stalls fills at most MAX_IN_FLIGHT writes, after which data goes to store and forward.
 *
 * Store and forward has two forms (docs/sparkplug.md). With the on-board history (`replay`, the
 * full-rate ring of src/history/ through a port the composition root adapts) nothing is copied:
 * the node notes, per device, when its data stopped going out, and after the next births replays
 * the ring's changes since then, poll by poll, with is_historical (what the ring no longer reaches
 * is counted and WARNed). Without it, a bounded queue of DDATA (`sparkplug.store_forward`; dropped
 * oldest first beyond it, counted and WARNed).
 */
import type {
  ArgSpec,
  Clock,
  DeviceCapabilities,
  FunctionSpec,
  Logger,
  MqttConnect,
  MqttSession,
  Quality,
  TimerId,
  TypedValue,
  ValueType,
} from "../common/mod.ts";
import type { AuditOrigin, CallRequest, CallResult } from "../control/mod.ts";
import { reachedProvider } from "../control/mod.ts";
import {
  errorMessage,
  integerWrittenExactly,
  namedList,
  neverThrowing,
  providerTextWithin,
  quoteProviderTextWithin,
  reloadStartWords,
  SpellLog,
  toRuntimeError,
} from "../common/mod.ts";
import type { SparkplugConfig } from "../config/mod.ts";
import type { PublishedEvent } from "../events/mod.ts";
import type { InventoryReader, SignalState } from "../state/mod.ts";
import {
  DataType,
  decode,
  encode,
  functionBirthMetric,
  functionMetricName,
  type MessageType,
  type Metric,
  mqttPacketBytes,
  type Payload,
  propertySet,
  QUALITY_CODE,
  signalBirthMetric,
  signalValueFields,
  sparkplugDeviceId,
  sparkplugDeviceProvider,
  topicOf,
} from "./payloads.ts";

/** The node-level state published in NBIRTH and NDATA. */
export interface NodeStatus {
  readonly mode: string;
  readonly estopLatched: boolean;
  readonly alarmsActive: number;
  readonly alarmsUnacked: number;
  readonly providersUp: number;
  readonly providersDown: number;
}

/** Writes handed to the MQTT client and not yet confirmed, at most (then: store and forward). */
export const MAX_IN_FLIGHT = 1000;

/**
 * With the history ring: the live DDATA written last (device and poll) remembered, at most, so
 * that a replay started by one whose write failed (#lost) skips the later polls that did go out
 * while it was in flight (at most MAX_IN_FLIGHT - 1 of them), also when it resumes after its
 * device's DDEATH and next DBIRTH.
 */
export const LIVE_OUT_KEPT = MAX_IN_FLIGHT;
/**
 * With the history ring: the polls written live of devices whose replay waits for their next
 * DBIRTH (#replayAfterBirth) or resumed from it, kept per device apart from the LIVE_OUT_KEPT
 * shared by all (which other devices' writes push out meanwhile), in all at most: beyond it a
 * resumed replay may send such a poll again (WARNed once until none is kept).
 */
export const PARKED_WRITTEN_KEPT = 4 * LIVE_OUT_KEPT;
/** How long stop() waits for NDEATH to be written before it drops the connection. */
export const STOP_PUBLISH_TIMEOUT_MS = 2000;
/**
 * How long stop() waits for a graceful end of the session (the client waits for every QoS 1 write
 * not acknowledged yet) before it ends it by force: a broker that never acknowledges does not hold
 * the runtime's shutdown.
 */
export const STOP_END_TIMEOUT_MS = 2000;
/**
 * How long the start waits for the bdSeq store (the last bdSeq loaded, the next saved), and a
 * reconnect for the next bdSeq to be recorded (BdSeqStore.save), before it connects anyway
 * (WARNed: a restart may then reuse that bdSeq, as after a failed save).
 */
export const BDSEQ_SAVE_WAIT_MS = 10_000;

/**
 * What makes an NBIRTH over `sparkplug.max_message_bytes` fit: on a connection the NBIRTH's size
 * changes only with the node metrics' values (the mode's name, the counts), and it is measured
 * again at each change of them (#publishNode); the ids and the bound need a restart. Said by the
 * ERROR and by a command's refusal meanwhile (#notOnlineWhy: once it fits, the node comes online),
 * and by a Rebirth refused while online (#rebirthTooLargeWhy: once it fits, a Rebirth is served),
 * so it names no state; their reasons, with the largest byte counts, stay within
 * SPARKPLUG_QUOTED_REASON_CHARS: a line never cuts it.
 */
export const NBIRTH_TOO_LARGE_CURES = "a shorter mode name (IDLE, not MANUAL) or smaller alarm " +
  "or provider counts make the NBIRTH fit; else, at a restart, shorten group_id/edge_node_id or " +
  "raise the bound";

/** Node metric names (NBIRTH/NDATA). */
export const NODE_METRICS = {
  bdSeq: "bdSeq",
  rebirth: "Node Control/Rebirth",
  estop: "Node Control/E-Stop",
  mode: "Runtime/Mode",
  latched: "Runtime/Estop Latched",
  alarmsActive: "Alarms/Active",
  alarmsUnacked: "Alarms/Unacked",
  providersUp: "Providers/Up",
  providersDown: "Providers/Down",
  /** The answer to the last NCMD: `<metric>: OK` or `<metric>: REFUSED: <why>` (a String). */
  commandResult: "Runtime/Command Result",
  version: "Properties/Runtime Version",
  /**
   * NBIRTHs of this group and edge node id that the node did not publish (counts.foreignBirths,
   * #ownBirthSeen; a UInt64, this process's count): above 0, another client publishes as this node.
   */
  foreignBirths: "Sparkplug/Foreign Births",
} as const;

/**
 * The node metrics as the node publishes them: the runtime's (NodeStatus) and the node's own
 * count of NBIRTHs another client published as it (counts.foreignBirths).
 */
interface NodeState extends NodeStatus {
  readonly foreignBirths: number;
}

/**
 * Replay walks (one per device and outage) waiting or in progress, at most: an outage's devices
 * beyond it are not replayed (counted as dropped, WARNed).
 */
export const MAX_REPLAY_WALKS = 4096;

/**
 * The on-board history as store and forward reads it (implemented over src/history/ by the
 * composition root): the changes the full-rate ring recorded, per device.
 */
export interface HistoryReplay {
  /** `history.memory_seconds`: how far back the ring reaches (named in the WARN of a gap). */
  readonly memorySeconds: number;
  /** `history.memory_max_bytes`: the ring's byte bound (it may shorten the reach). */
  readonly memoryMaxBytes: number;
  /**
   * The poll sequence number the device's next recorded poll gets (0 for a device the ring has
   * not seen): an outage notes it, so its replay follows poll order whatever the wall clock does.
   */
  position(providerId: string, deviceId: string): number;
  /**
   * A walk over the changes of `signalIds` of one device at its polls [fromSeq, untilSeq) that the
   * ring holds now (polls recorded later are not part of it); null when it holds nothing of the
   * device.
   */
  open(
    providerId: string,
    deviceId: string,
    signalIds: Iterable<string>,
    fromSeq: number,
    untilSeq: number,
  ): ReplayWalk | null;
}

/** A cursor over one device's changes, poll by poll in poll order (continued later). */
export interface ReplayWalk {
  /**
   * From which poll the ring holds every change of the device (a sequence number): later than
   * the walk's `fromSeq` when the ring no longer reaches back that far; -Infinity when it holds
   * all.
   */
  readonly reachFromSeq: number;
  /** The time of that poll (epoch ms; -Infinity with it, Infinity when none is kept): for messages. */
  readonly reachFromMs: number;
  /** Polls the cursor had not reached were dropped by the ring meanwhile (a replay too slow). */
  readonly overtaken: boolean;
  /** The sequence number of the poll `next` returned last. */
  readonly seq: number;
  /**
   * The next poll with changes: `each` per changed signal, then its time; null when done. The
   * value is a fresh object or one the ring holds (not to be changed); `unit` the unit it was
   * polled in, as its signal was declared then ("" for none; null: the ring no longer knows).
   */
  next(
    each: (
      signalId: string,
      value: TypedValue | null,
      quality: Quality,
      timeMs: number,
      unit: string | null,
    ) => void,
  ): number | null;
}

/** The DBIRTH metric naming a device's type (its properties: provider, device, label, version). */
const DEVICE_TYPE_METRIC = "Properties/Type";

/** The device id of the node itself where a command is answered (node metrics' aliases too). */
const NODE = "";

/**
 * Why a DCMD is refused, or a Rebirth ignored, while the node is not online (after its NDEATH, or
 * its births waiting).
 */
const NOT_ONLINE =
  "the node is not online (no births on this connection yet: waiting for the primary host or the broker)";

/**
 * Why a DCMD is refused once the runtime stops (closeCommands): as the HTTP API refuses a call then
 * and the tree is halted, nothing new commands the machine; an NCMD e-stop is still taken.
 */
export const RUNTIME_STOPPING =
  "the runtime is stopping: no command is carried out (an NCMD Node Control/E-Stop still is)";

/**
 * Answers to commands waiting for the writes in flight to drop under MAX_IN_FLIGHT, at most (the
 * latest per metric; an answer for another metric beyond it is dropped, counted as a publish
 * failure).
 */
export const MAX_ANSWERS_WAITING = 256;

/**
 * Changes of the node metrics kept while the node is not online (the primary host away, the
 * broker unreachable), at most: replayed with is_historical after the next births; beyond it the
 * oldest is dropped (counted in storeDropped, WARNed once per outage).
 */
export const MAX_NODE_CHANGES_KEPT = 1024;

/**
 * A message of the node whose wall-clock read failed (#wallNow: a node metric change, the births,
 * a DBIRTH or DDEATH, the answer to a command; no time to stamp it) is tried again this soon
 * (monotonic ms), or at the next completed write if that comes first: a failing clock does not
 * leave the host with the old mode or latch, a node it never sees online, a dead device shown
 * alive or a command unanswered until some other change. One retry timer at a time.
 */
export const NODE_CLOCK_RETRY_MS = 1000;

/**
 * A connection the broker closes this soon after its births (monotonic ms) counts as closed by
 * them: a broker that refuses one of them (Mosquitto's `max_packet_size` below a large DBIRTH
 * closes the connection of the client that publishes it) closes every connection at its births.
 */
export const BIRTH_LOSS_WINDOW_MS = 10_000;
/**
 * Connections in a row closed within BIRTH_LOSS_WINDOW_MS of their births before the node says so
 * (one WARN per stretch) and waits longer before each next one (doubling from reconnect_ms).
 * Five, not fewer: a network that flaps makes a few short connections; five in a row, each closed
 * within seconds of its births, is a broker refusing them.
 */
export const BIRTH_LOSSES_BEFORE_BACKOFF = 5;
/**
 * Distinct broker connection errors WARNed until a connection holds (each message once; past
 * this many, more distinct ones are logged at DEBUG): a broker that closes connections in a loop
 * is said once per kind of error, not once per close.
 */
export const BROKER_ERRORS_SAID = 8;
/** The longest wait before a new connection in such a stretch (reconnect_ms if that is longer). */
export const MAX_BIRTH_LOSS_DELAY_MS = 60_000;

/**
 * Least time between two birth sets that NCMD `Node Control/Rebirth` commands cause (monotonic ms,
 * from the start of one to the next): a Rebirth sooner than this after the last one's births is
 * answered by ONE birth set at the end of the interval, with every other Rebirth meanwhile
 * (#rebirthAsked). Sparkplug B 3.0 asks that a Rebirth be answered with the births, not when: a
 * host asking in a loop (one NCMD every few ms for seconds) otherwise gets a full set per set
 * completed, hundreds of NBIRTHs and DBIRTHs a second for every host on the group. One second: a
 * host that lost the births (QoS 0) and asks again has them within a second; it is the fleet view's
 * own first wait between two asks (REBIRTH_RETRY_FIRST_MS), and a storm costs at most one set a
 * second. The first births of a connection do not count: a host's first Rebirth after them is
 * answered at once.
 */
export const MIN_REBIRTH_INTERVAL_MS = 1000;

/** Commands from the broker being carried out at once, at most (more are refused: busy). */
export const MAX_COMMANDS_IN_PROGRESS = 16;
/**
 * Largest NCMD/DCMD payload the node reads, in bytes of the Sparkplug payload: a larger one is
 * refused before it is decoded (#commandTooLarge), since only the broker bounds what arrives
 * (Mosquitto's default is some 256 MB) and decoding one of millions of metrics holds the event
 * loop. The bound of an HTTP request's body (MAX_BODY_BYTES, src/http/json_body.ts, 64 KiB): a
 * DCMD carries what a POST of a call carries. A valid NCMD e-stop is far below it: `Node
 * Control/E-Stop` true by name, with timestamps, is 41 bytes; with a Rebirth beside it, aliases
 * and seq, under 100.
 */
export const MAX_COMMAND_BYTES = 64 * 1024;
/**
 * The bdSeq values of this node's latest connections (the previous process's last included) whose
 * NBIRTH arriving late on the node's own subscription is not taken for another client's
 * (#ownBirthSeen): a broker that stalled may route a PUBLISH of a connection gone after the next
 * connection subscribed. 4 connections back; one is the case seen.
 */
export const OWN_BDSEQS_KEPT = 4;

/** #send's liveSeq of a kept node metric change replayed (#drainNode); 0 is a live one. */
const REPLAYED_NODE_DATA = 1;

/**
 * Topics whose retained commands are WARNed on one connection, at most (one line per topic per
 * connection; beyond it one line says the rest are not logged). Emptied at each connection.
 */
export const MAX_RETAINED_TOPICS_WARNED = 64;

/**
 * Devices whose signals named as a node-made metric (a clash) the node remembers having WARNed,
 * at most: a clash is said once, not at every birth (Rebirth, reconnect, a provider back); beyond
 * it the device said longest ago is forgotten (its clash said again at its next birth).
 */
export const MAX_CLASHES_REMEMBERED = 1024;

/**
 * Signals of one device a clash line names (each quoted, cut to SPARKPLUG_QUOTED_NAME_CHARS); the
 * rest are counted ("and N more").
 */
export const MAX_CLASH_SIGNALS_NAMED = 20;

/**
 * Devices (the node counted as one) whose metric left out of a DDATA/NDATA for its size the node
 * remembers having WARNed, at most: one line per device, not per metric; beyond it one line says
 * that further devices' are not logged (all of them are counted: tooLargeDropped).
 */
export const MAX_TOO_LARGE_DEVICES_WARNED = 1024;

/**
 * Longest text of a primary host's STATE message a log line quotes (one the node ignores), in
 * UTF-16 code units: what a host publishes cannot make one line of any length.
 */
export const STATE_TEXT_QUOTED_CHARS = 80;

/**
 * Longest device id, metric or command name (a provider's or a broker's text) a log line quotes, in
 * UTF-16 code units; longer is cut, marked with an ellipsis.
 */
export const SPARKPLUG_QUOTED_NAME_CHARS = 128;
/**
 * Longest reason of a refused or failed command (it may carry a provider's message) a line quotes:
 * the runtime's own longest reason (a Rebirth refused while online, its NBIRTH over the bound, with
 * NBIRTH_TOO_LARGE_CURES: some 340 characters with the largest byte counts) is never cut.
 */
export const SPARKPLUG_QUOTED_REASON_CHARS = 400;

/** A device id, metric or command name in a log line: cut to SPARKPLUG_QUOTED_NAME_CHARS, quoted. */
function quoteName(name: string): string {
  return quoteProviderTextWithin(name, SPARKPLUG_QUOTED_NAME_CHARS);
}

/** A payload of no metrics at timestamp 0 (what each metric's size is measured over). */
const EMPTY_PAYLOAD_BYTES = encode({ timestamp: 0, metrics: [] }).length;

/**
 * Metrics in order as consecutive parts, each `fixedBytes` (the packet without metrics) plus its
 * metrics' encoded bytes at most `limit`; a metric that fits in no part alone is `dropped`.
 */
export function splitMetrics(
  metrics: readonly Metric[],
  fixedBytes: number,
  limit: number,
): { parts: Metric[][]; dropped: Metric[] } {
  const parts: Metric[][] = [];
  const dropped: Metric[] = [];
  let cur: Metric[] = [];
  let curBytes = fixedBytes;
  for (const m of metrics) {
    // A repeated field: each metric adds its own tag, length and body (additive).
    const bytes = encode({ timestamp: 0, metrics: [m] }).length - EMPTY_PAYLOAD_BYTES;
    if (fixedBytes + bytes > limit) {
      dropped.push(m);
      continue;
    }
    if (curBytes + bytes > limit) {
      parts.push(cur);
      cur = [];
      curBytes = fixedBytes;
    }
    cur.push(m);
    curBytes += bytes;
  }
  if (cur.length > 0) parts.push(cur);
  return { parts, dropped };
}

/** What commands from the broker may do (present only with `sparkplug.commands: true`). */
export interface CommandPorts {
  /** An ordinary routed call, gated as a manual one, audited with origin kind `sparkplug`. */
  call(req: CallRequest): Promise<CallResult>;
  /**
   * Triggers the e-stop (never clears it: there is no port for that). `onLatched` is called once
   * the latch is engaged, before the safe-state ladder; the promise settles with the whole stop
   * (rejected: the trigger threw, before or after the latch).
   */
  estop(reason: string, source: AuditOrigin, onLatched?: () => void): Promise<unknown>;
}

/** What the edge node is built from. */
export interface EdgeNodeOptions {
  readonly config: SparkplugConfig;
  readonly edgeNodeId: string;
  readonly clientId: string;
  readonly connect: MqttConnect;
  /** SPARKPLUG_USERNAME / SPARKPLUG_PASSWORD as read at start (never logged). */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** The TLS files' contents (read by the composition root). */
  readonly tls?: {
    readonly ca?: Uint8Array | undefined;
    readonly cert?: Uint8Array | undefined;
    readonly key?: Uint8Array | undefined;
  };
  readonly bus: { subscribe(listener: (e: PublishedEvent) => void): () => void };
  readonly inventory: InventoryReader;
  readonly reads: {
    signal(providerId: string, deviceId: string, signalId: string): SignalState | undefined;
    /** The quality a reader sees now: STALE for an OK sample past its bound (StateCache). */
    qualityNow(providerId: string, deviceId: string, signalId: string, s: SignalState): Quality;
  };
  readonly status: () => NodeStatus;
  /**
   * Subscribes to the changes of the mode and the e-stop latch, told whether or not their event
   * was published on the bus (a clock that failed twice: no time to date it, no event): the node
   * metrics still reach the host (stamped at the node's own clock read). Returns the unsubscribe
   * function.
   */
  readonly statusChanges?: ((listener: () => void) => () => void) | undefined;
  /** Present only with `sparkplug.commands: true`. */
  readonly commands?: CommandPorts | undefined;
  /**
   * The on-board history (present when history is enabled): store and forward replays its ring
   * instead of keeping a queue of its own.
   */
  readonly replay?: HistoryReplay | undefined;
  /** Keeps bdSeq across restarts (without it every process starts at 0). */
  readonly bdSeqStore?: BdSeqStore | undefined;
  readonly runtimeVersion: string;
  readonly clock: Clock;
  /** The node's lines; taken wrapped in neverThrowing (a line it fails to write is lost). */
  readonly log: Logger;
}

/**
 * Where the node's bdSeq outlives the process. A node restarted within 1.5 x keep-alive of a crash
 * must not reuse its last bdSeq: the broker publishes the crashed connection's will (NDEATH) when
 * the new connection takes its client id over, and a host that matches NDEATH to NBIRTH by bdSeq
 * would take it for the new connection's death.
 */
export interface BdSeqStore {
  /** The bdSeq of the last connection's will (null: none recorded, or unreadable). */
  load(): Promise<number | null>;
  /** Records the bdSeq of the will now registered with the broker. */
  save(bdSeq: number): Promise<void>;
}

/** Counters for metrics and tests. */
export interface EdgeNodeCounts {
  connects: number;
  births: number;
  published: number;
  publishFailures: number;
  commandsIgnored: number;
  /** Commands carried out (calls that succeeded, e-stops triggered). */
  commandsAccepted: number;
  /** Commands refused (commands off, role, unknown metric, or a gate of the call path). */
  commandsRefused: number;
  /**
   * DCMD calls the provider got that then failed (an error status, no answer in time): answered
   * FAILED, not REFUSED, for the provider may have acted; and NCMD e-stops whose trigger threw
   * before the latch engaged.
   */
  commandsFailed: number;
  /**
   * DDATA kept while the broker was unreachable (or the in-flight bound full), since start. Always
   * 0 with the history ring (nothing is copied).
   */
  stored: number;
  /**
   * Of those, dropped oldest-first at the store-and-forward bounds, or their device gone on
   * reconnect. With the history ring: devices whose outage data could not all be replayed (the
   * ring no longer reached back to the device's outage start, the ring dropped polls the replay
   * had not reached, the device was not born again, or MAX_REPLAY_WALKS), one per device and
   * outage. Also node metric changes beyond MAX_NODE_CHANGES_KEPT while not online.
   */
  storeDropped: number;
  /** DDATA published with is_historical after a reconnect (kept ones, or from the ring). */
  replayed: number;
  /** Sessions ended (after NDEATH) because the primary host went offline. */
  hostOfflineDisconnects: number;
  /** STATE messages of the primary host ignored: older than one seen, or unreadable. */
  hostStatesIgnored: number;
  /**
   * Errors of the edge node's own code caught where it is entered (broker callbacks, deferred
   * work, write completions): each logged at ERROR; the node goes on (see #contain).
   */
  internalErrors: number;
  /**
   * Metrics of DDATA/NDATA left out because one alone makes a message over
   * `sparkplug.max_message_bytes` (WARNed once; a larger message of several is split instead).
   */
  tooLargeDropped: number;
  /**
   * NBIRTHs of this node's group and edge node id that it did not publish (#ownBirthSeen):
   * another client publishes as this node (a second runtime or another edge node with this id).
   */
  foreignBirths: number;
}

/** A device not born because its DBIRTH is over `sparkplug.max_message_bytes`. */
export interface UnbornTooLarge {
  /** Its Sparkplug device id (`<provider>:<device>`). */
  readonly deviceId: string;
  /** Its DBIRTH's MQTT packet size as the bound counts it (mqttPacketBytes). */
  readonly bytes: number;
}

/** One DDATA kept for store and forward. */
interface StoredData {
  readonly deviceId: string;
  readonly timestampMs: number;
  /**
   * The monotonic time it was polled (kept, or sent live): the queue's order. Not its wall time,
   * which falls after a step back of the wall clock (NTP) while the data it follows does not.
   */
  readonly atMono: number;
  readonly metrics: Metric[];
  readonly bytes: number;
  /** Its device's signals' units when it was kept (#declaredUnits; undefined: not known). */
  readonly units: ReadonlyMap<string, string> | undefined;
}

/** A replay in progress: one device's changes since its outage start. */
interface Replaying {
  readonly id: string;
  readonly walk: ReplayWalk;
  /** Samples left out: polled as another type than the signal's birth declares now. */
  mistyped: number;
  /** Samples left out: polled in another unit than the signal's birth declares now. */
  misunit: number;
  /**
   * Where the replay stands: the first poll not handed over yet, and the time of the last one
   * handed over (of the outage start before any): its outage start again should the connection
   * go away before it ends (#replayBack).
   */
  next: OutageStart;
}

/** One birth set (#births) and its writes not settled yet (handed over, neither done nor failed). */
interface BirthSet {
  readonly session: MqttSession | null;
  writes: number;
}

interface BornDevice {
  readonly providerId: string;
  readonly deviceId: string;
  readonly signals: ReadonlySet<string>;
  /** Its function metrics (`Functions/<name>`, Strings): where a DCMD's answer goes. */
  readonly functions: ReadonlySet<string>;
  /** Each signal's type as its DBIRTH declared it (null: not declared). */
  readonly types: ReadonlyMap<string, ValueType | null>;
  /** Each signal's unit as its DBIRTH declared it (`engUnit`; "" for none). */
  readonly units: ReadonlyMap<string, string>;
  /** What its DBIRTH described (birthDescription): another description is born again. */
  readonly description: string;
}

/**
 * Everything of a device's capabilities its DBIRTH declares (signals and their types, functions
 * and their arguments, the device's type and label), as one comparable string.
 */
function birthDescription(caps: DeviceCapabilities): string {
  return JSON.stringify(
    [caps.device, caps.signals, caps.functions],
    (_k, v) => typeof v === "bigint" ? `${v}n` : v,
  );
}

interface PendingSignal {
  value: TypedValue | null;
  quality: Quality;
  timestampMs: number;
  /** With the history ring: the sequence number of the poll the change belongs to. */
  seq: number;
}

/** Where a device's outage began: its first change not sent (time for messages, poll for the walk). */
interface OutageStart {
  readonly atMs: number;
  readonly seq: number;
}

export class SparkplugEdgeNode {
  readonly #o: EdgeNodeOptions;
  readonly #log: Logger;
  #session: MqttSession | null = null;
  #bdSeq = 0;
  /** The bdSeq of this node's earlier connections, the latest last (OWN_BDSEQS_KEPT). */
  readonly #ownBdSeqs: number[] = [];
  /** NBIRTHs handed to the client on this connection, and those of its bdSeq heard back. */
  #birthsSent = 0;
  #birthsHeard = 0;
  /** A foreign NBIRTH was WARNed (once per process; the rest counted). */
  #foreignBirthSaid = false;
  /** A refused subscription to its own NBIRTH topic was WARNed (once per process). */
  #ownBirthsRefusedSaid = false;
  /** The save of bdSeq under way (#saveBdSeq), or null. */
  #bdSeqSaving: Promise<void> | null = null;
  /** The bdSeq the store last recorded (null: none this process). */
  #bdSeqRecorded: number | null = null;
  /**
   * Saves of bdSeq that failed since one last worked (a full disk): the first of a failing spell
   * is WARNed, the rest are DEBUG, and the save that works again says how many failed.
   */
  readonly #bdSeqSaves: SpellLog;
  /**
   * Wall-clock reads that failed dating a message of the node since one last worked (#wallNow):
   * the first of a failing spell is WARNed, the read that works again says how many failed.
   */
  readonly #clockFails: SpellLog;
  /** The timer that tries what the clock could not date again (#clockRetried), or null. */
  #clockRetry: TimerId | null = null;
  /**
   * Monotonic-clock reads that failed (threw, not a finite number, or behind one already read)
   * since one last worked (#monoRead): the first of a failing spell is WARNed, the read that works
   * again says how many failed.
   */
  readonly #monoFails: SpellLog;
  /**
   * The latest monotonic reading that worked (#monoRead; -Infinity before the first): the place in
   * order of what is read while the monotonic clock fails (#monoNow).
   */
  #lastMono = -Infinity;
  /**
   * The first births of this connection waited for the wall clock (#births): tried again by
   * #clockRetried (a Rebirth's wait as #rebirthBehind).
   */
  #birthsUndated = false;
  /**
   * NCMD e-stop answers for the host's history (#keepEstopAnswer) given while the wall clock
   * failed: dated at its first read that works (#clockRetried), in the order they were given.
   * MAX_ANSWERS_WAITING at most (beyond it the oldest is dropped, counted as a publish failure).
   */
  #estopAnswersUndated: { atMono: number; value: string }[] = [];
  #seq = 0;
  /** Whether the births of the current connection went out (data waits for them). */
  #born = false;
  /**
   * The broker accepted the current session's CONNECT (CONNACK): its will, with the current
   * bdSeq, is registered there, births or not.
   */
  #accepted = false;
  #stopped = false;
  /** The NCMD/DCMD (and STATE) subscriptions of the current connection are in place. */
  #subscribed = false;
  /** The primary host's last STATE on this connection said online (always true without one). */
  #hostOnline = false;
  /** The newest STATE timestamp seen (a STATE older than it is ignored). */
  #hostTimestamp = -Infinity;
  /**
   * A Sparkplug 3.0 STATE of the primary host was seen (this process): the legacy `STATE/<id>`
   * is not followed from then on (#hostState).
   */
  #hostSpeaks3 = false;
  /** Ending the session because the primary host went offline (a new one follows). */
  #leaving = false;
  /** The NDEATH written (or being written) on a session, and whether it was: one per session. */
  #death: { readonly session: MqttSession; readonly sent: Promise<boolean> } | null = null;
  /** Ends the wait of #renew (stop() calls it), or null. */
  #wake: (() => void) | null = null;
  /** endStart() was called: start() opens no broker session. */
  #startEnded = false;
  /** closeCommands() was called (the runtime stops): DCMDs are refused, the e-stop still taken. */
  #commandsClosed = false;
  #inFlight = 0;
  /** CONNECTs in a row that reached the broker and got no CONNACK (bounds their WARN). */
  #unansweredConnects = 0;
  /** When the current connection's first births went out (monotonic ms), or null. */
  #bornAtMono: number | null = null;
  /**
   * The largest message written in the current stretch of connections closed at their births (a
   * birth, or a DDATA the replay after them writes again), said in its WARN (#afterBirthLoss).
   */
  #largestWrite: { readonly topic: string; readonly bytes: number } | null = null;
  /** Connections in a row the broker closed within BIRTH_LOSS_WINDOW_MS of their births. */
  #birthLosses = 0;
  /**
   * The broker connection errors WARNed, by message, until a connection is accepted outside a
   * stretch of births lost (at most BROKER_ERRORS_SAID; more distinct ones go to DEBUG).
   */
  readonly #brokerErrorsSaid = new Set<string>();
  /** Aliases by Sparkplug device id (NODE: the node's) then metric name (#alias). */
  readonly #aliases = new Map<string, Map<string, number>>();
  /** How many aliases #aliases holds. */
  #aliasCount = 0;
  /**
   * Alias -> its device and metric name (commands may name metrics by alias). Held apart, not
   * joined into one text: a metric name is a provider's text and may hold any character.
   */
  readonly #aliasNames = new Map<
    number,
    { readonly deviceId: string; readonly name: string }
  >();
  #commandsInProgress = 0;
  #nextAlias = 1;
  /** Devices born on the current connection, by Sparkplug device id. */
  readonly #devices = new Map<string, BornDevice>();
  /** Changes not yet published, by Sparkplug device id then signal id. */
  readonly #pending = new Map<string, Map<string, PendingSignal>>();
  #flushQueued = false;
  #nodeQueued = false;
  /** The node metrics as the host last got them (the NBIRTH, then each NDATA handed over). */
  #lastNode: NodeState | null = null;
  /**
   * Before the first births: the node metrics at watch(), then as last kept (#keepNode), so that
   * what changed before the first NBIRTH (an e-stop latched and cleared while the births waited
   * for the broker or the primary host) reaches the host's history after it. Null once born.
   */
  #unbornNode: NodeState | null = null;
  /** watch() subscribed the node to the runtime. */
  #watching = false;
  /**
   * A change of the node metrics could not be handed over (MAX_IN_FLIGHT writes unconfirmed): its
   * NDATA goes first when a write completes.
   */
  #nodeBehind = false;
  /**
   * While #nodeBehind: when the first change left behind was made and the node metrics then; kept
   * as the node's history (#keepBehind) should the connection go away before it goes out, or the
   * metrics move on before a write completes (#keepOvertaken).
   */
  #nodeBehindSince:
    | { readonly atMs: number; readonly atMono: number; readonly status: NodeState }
    | null = null;
  /** A Rebirth was asked for while MAX_IN_FLIGHT writes were unconfirmed: due at the next one. */
  #rebirthBehind = false;
  /**
   * The latest birth set (#births: its NBIRTH and DBIRTHs) on its session, with its writes not yet
   * settled (confirmed or failed); null before the first.
   */
  #birthSet: BirthSet | null = null;
  /** The birth set #births is handing over now (#send counts its writes), else null. */
  #birthSetOpen: BirthSet | null = null;
  /**
   * An NCMD Rebirth arrived while a birth set was going out (#rebirthAsked): one birth set follows
   * once its writes have settled, for every Rebirth meanwhile (#foldedRebirth).
   */
  #rebirthFolded = false;
  /**
   * When the births of the last Rebirth began (monotonic ms; null: none this process): the next
   * Rebirth's set waits for MIN_REBIRTH_INTERVAL_MS after it (#rebirthWaitMs).
   */
  #rebirthAtMono: number | null = null;
  /** The timer that answers a Rebirth folded into MIN_REBIRTH_INTERVAL_MS (#foldedRebirth), or null. */
  #rebirthTimer: TimerId | null = null;
  /**
   * Providers whose devices changed (availability, inventory) while MAX_IN_FLIGHT writes were
   * unconfirmed: their DBIRTH/DDEATH wait, and their devices are compared again as writes
   * complete (flaps meanwhile are one change). One entry per provider id at most.
   */
  readonly #providersBehind = new Set<string>();
  /**
   * Providers seen up since the node started (#noteUp): a down one of them with no devices known
   * came up with none, and claims no device id (#notBorn). At most the configured providers.
   */
  readonly #seenUp = new Set<string>();
  /**
   * Answers to commands not handed over yet (MAX_IN_FLIGHT writes unconfirmed), the latest per
   * metric (`device\u0000metric name`; device NODE for an NCMD), sent first when writes complete.
   * One text key is exact here: a Sparkplug device id holds no NUL (sparkplugDeviceId encodes
   * every control character, NODE is empty), so the first NUL parts device from metric name.
   */
  readonly #answersWaiting = new Map<
    string,
    // atMs null: the clock failed when it was given (dated when it goes out, or kept: #wallNow).
    { deviceId: string; name: string; text: string; atMs: number | null; atMono: number }
  >();
  /**
   * Answers to DCMDs to a device its provider has whose DBIRTH had not gone out (#notBorn), by
   * provider id: held until that provider's births went out (#providerChanged ran to its end, or
   * all births), so a host reads the refusal after the DBIRTH it names, whichever write completes
   * first. MAX_ANSWERS_WAITING in all at most (beyond it dropped, counted as a publish failure).
   */
  readonly #answersAfterBirth = new Map<string, { name: string; text: string }[]>();
  #answersAfterBirthCount = 0;
  /**
   * Node metric changes while not online (after the first births), those whose live NDATA failed
   * with the connection (#lostNode), and NCMD e-stop answers not published (#keepEstopAnswer),
   * oldest first, each an NDATA's metrics (is_historical)
   * at its time: MAX_NODE_CHANGES_KEPT at most. Oldest by `atMono`, the monotonic time of the
   * change: a step back of the wall clock meanwhile dates a later change earlier.
   */
  #nodeKept: {
    readonly timestampMs: number;
    readonly atMono: number;
    readonly metrics: Metric[];
  }[] = [];
  /** The current outage's drops of #nodeKept have been WARNed. */
  #nodeKeptWarned = false;
  /**
   * Command topics whose retained copy was WARNed on this connection (MAX_RETAINED_TOPICS_WARNED
   * at most; emptied at each connection).
   */
  readonly #retainedWarned = new Set<string>();
  /**
   * Device id -> the clash line last WARNed for it (#sayClash), oldest first: the line, not the
   * clash, so that a device of any number of clashing signals keeps one line's text (it names
   * MAX_CLASH_SIGNALS_NAMED signals at most, each cut to SPARKPLUG_QUOTED_NAME_CHARS).
   */
  readonly #clashesSaid = new Map<string, string>();
  /** UTF-16 code units of the lines in #clashesSaid, all devices together. */
  #clashTextChars = 0;
  /** More topics than MAX_RETAINED_TOPICS_WARNED met retained commands on this connection. */
  #retainedOverWarned = false;
  readonly #unsubscribe: Array<() => void> = [];
  /** Store and forward (`sparkplug.store_forward`): oldest first, bounded in count and bytes. */
  readonly #store: StoredData[] = [];
  #storeHead = 0;
  /** DDATA in #store per Sparkplug device id (a device with none has no entry). */
  readonly #storedOf = new Map<string, number>();
  #storeBytes = 0;
  /** Whether the current stretch of drops has been WARNed (one line per stretch). */
  #dropWarned = false;
  /** A stored value of a signal's old type was left out since the store last drained. */
  #mistypedWarned = false;
  /** A stored value polled in a signal's old unit was left out since the store last drained. */
  #misunitWarned = false;
  /**
   * Without the history ring: each device's signals' units as its provider declares them now
   * (SignalSpec.unit, "" for none), by Sparkplug id, noted as the inventory changes (#noteUnits,
   * never per poll; a map replaced only when a unit changed). A kept DDATA takes its device's
   * (StoredData.units): a value polled in another unit than its signal's birth declares now is
   * left out (#asBorn), as the ring's replay leaves it out -- a host would read 20 polled in degC
   * under a birth declaring K as 20 K.
   */
  readonly #declaredUnits = new Map<string, ReadonlyMap<string, string>>();
  /**
   * Without the history ring: the type each DDATA metric's value was polled as (null: none), by
   * the metric object, which #keep, #drain, #send and #lost pass on as it is. A kept value whose
   * signal's birth declares another type now is left out (#asBorn): its field cannot tell, since
   * Int64 and UInt64 both travel in `long_value` (-5 polled as int64 would read as
   * 18446744073709551611 under a UInt64 birth), and a value polled while the signal was typeless
   * travels as text whatever its type.
   */
  readonly #polledTypes = new WeakMap<Metric, ValueType | null>();
  /**
   * With the history ring: per born device (Sparkplug id), when its data stopped going out (the
   * first change that could not be published); null while nothing waits.
   */
  #outage: Map<string, OutageStart> | null = null;
  /** With the history ring: replays waiting or in progress, oldest first (a cursor each). */
  #walks: (Replaying | null)[] = [];
  /**
   * With the history ring: devices that left (DDEATH) with data not replayed yet, by Sparkplug id:
   * where their replay stands. It goes on after their next DBIRTH (#deviceBirth); the next births
   * drop (count, WARN) those not born again. At most MAX_REPLAY_WALKS.
   */
  readonly #replayAfterBirth = new Map<string, OutageStart>();
  #walkHead = 0;
  /** With the history ring: live DDATA handed over and not settled (written or failed). */
  #liveInFlight = 0;
  /**
   * With the history ring: the last LIVE_OUT_KEPT live DDATA written (a ring: device, poll);
   * emptied whenever no replay waits, none is in flight and no device's position waits for its
   * next DBIRTH (#replayAfterBirth): nothing can need them then.
   */
  readonly #liveOutIds: string[] = new Array(LIVE_OUT_KEPT).fill("");
  readonly #liveOutSeqs: number[] = new Array(LIVE_OUT_KEPT).fill(-1);
  #liveOutNext = 0;
  #liveOutCount = 0;
  /**
   * With the history ring: per device whose position waits for its next DBIRTH
   * (#replayAfterBirth), or whose replay resumed from it may still run, its polls written live
   * from that position on (copied from #liveOutIds at its DDEATH, added as they are written), so
   * that other devices' writes meanwhile cannot push them out of the shared memory.
   * PARKED_WRITTEN_KEPT polls in all at most (#parkedWrittenCount); emptied with the shared one.
   */
  readonly #parkedWritten = new Map<string, Set<number>>();
  #parkedWrittenCount = 0;
  /** A poll was not kept in #parkedWritten (full) since it was last empty: WARNed once. */
  #parkedFullWarned = false;
  readonly counts: EdgeNodeCounts = {
    connects: 0,
    births: 0,
    published: 0,
    publishFailures: 0,
    commandsIgnored: 0,
    commandsAccepted: 0,
    commandsRefused: 0,
    commandsFailed: 0,
    stored: 0,
    storeDropped: 0,
    replayed: 0,
    hostOfflineDisconnects: 0,
    hostStatesIgnored: 0,
    internalErrors: 0,
    tooLargeDropped: 0,
    foreignBirths: 0,
  };
  /**
   * Devices not born because their DBIRTH is over `sparkplug.max_message_bytes`, by Sparkplug id:
   * its size and the capabilities it was measured for (the same ones are not measured again until
   * the next births). An entry is one spell, WARNed once (and again with changed capabilities
   * still too large); it ends when the device is born or leaves the configuration, not while its
   * provider is down (#providerChanged), when it is kept but not listed (unbornTooLarge).
   */
  readonly #tooLarge = new Map<
    string,
    { readonly providerId: string; readonly bytes: number; readonly description: string }
  >();
  /**
   * The NBIRTH over `sparkplug.max_message_bytes` was said (ERROR once per spell: until the node
   * comes online, its NBIRTH shrunk within the bound, said at INFO; reconnecting does not end it).
   */
  #nbirthTooLargeSaid = false;
  /**
   * Births asked for again while online (rebirth()) were not published, the NBIRTH grown over
   * `sparkplug.max_message_bytes`: said at WARN once, until births are published again.
   */
  #rebirthTooLargeSaid = false;
  /**
   * The packet bytes of this connection's NBIRTH when its last births were held back for being
   * over `sparkplug.max_message_bytes` (#nbirthTooLarge), else null: the node cannot come online,
   * and a command's line says so rather than NOT_ONLINE's waiting (#notOnlineWhy).
   */
  #nbirthOverBytes: number | null = null;
  /**
   * Devices (NODE for the node) whose metric left out of a DDATA/NDATA for its size was WARNed
   * (once per device per process, at most MAX_TOO_LARGE_DEVICES_WARNED of them).
   */
  readonly #metricTooLargeSaid = new Set<string>();
  /** More devices than MAX_TOO_LARGE_DEVICES_WARNED had a metric left out (said once). */
  #metricTooLargeOverSaid = false;

  constructor(options: EdgeNodeOptions) {
    this.#o = options;
    // Lines that never throw: most are said from a broker callback, a timer or a write's
    // completion, before the work they announce (the reconnect after a lost connection), where a
    // logger that throws stopped that work and escaped #contain (its own line threw too).
    this.#log = neverThrowing(options.log);
    this.#bdSeqSaves = new SpellLog({
      log: this.#log,
      firstNote: "a restart may reuse it (said again once a save works)",
      restLevel: "debug",
      recovered: (failed, bdSeq) =>
        `sparkplug: bdSeq ${bdSeq} recorded again (${failed} save(s) failed before)`,
    });
    this.#clockFails = new SpellLog({
      log: this.#log,
      firstNote: `tried again in ${NODE_CLOCK_RETRY_MS} ms or at the next completed write ` +
        "(said again once the clock works)",
      recovered: (failed) =>
        `sparkplug: the wall clock dates the node's messages again (${failed} read(s) failed)`,
    });
    this.#monoFails = new SpellLog({
      log: this.#log,
      firstNote: "what it orders keeps its place after the last reading that worked; a " +
        "connection's age is not judged meanwhile (said again once the clock works)",
      recovered: (failed) =>
        `sparkplug: the monotonic clock reads again (${failed} read(s) failed)`,
    });
  }

  get bdSeq(): number {
    return this.#bdSeq;
  }

  /**
   * The bdSeq store's save the disk has not answered yet (a hung disk under runtime.data_dir: the
   * start's, waited for BDSEQ_SAVE_WAIT_MS only, or a reconnect's), null when none: it may still
   * land after stop(), which does not wait for it.
   */
  get bdSeqSaving(): Promise<void> | null {
    return this.#bdSeqSaving;
  }

  /** Whether the births of a live connection have been published. */
  get online(): boolean {
    return this.#born && (this.#session?.connected ?? false);
  }

  /** Whether the broker connection is up (births may still wait for the primary host). */
  get connected(): boolean {
    return this.#session?.connected ?? false;
  }

  /**
   * Metric aliases known now: the node's, the born devices' and those of devices whose DDATA wait
   * in the store-and-forward queue (#pruneAliases), not every device id the process ever saw.
   */
  get aliasCount(): number {
    return this.#aliasCount;
  }

  /**
   * UTF-16 code units of the clash lines the node remembers having WARNed (one per device, at
   * most MAX_CLASHES_REMEMBERED devices): what it keeps to say each clash once.
   */
  get clashTextChars(): number {
    return this.#clashTextChars;
  }

  /**
   * Devices not born because their DBIRTH is over `sparkplug.max_message_bytes` (the others are
   * born and publish as usual). One whose provider is down is not listed: it is down, not held
   * back for its size (its spell is kept: listed again once its provider is back).
   */
  get unbornTooLarge(): UnbornTooLarge[] {
    return [...this.#tooLarge]
      .filter(([, t]) => !this.#providerDown(t.providerId))
      .map(([deviceId, t]) => ({ deviceId, bytes: t.bytes }));
  }

  /** Whether the primary host is online by its last STATE (null: no primary host configured). */
  get primaryHostOnline(): boolean | null {
    return this.#o.config.primaryHostId === "" ? null : this.#hostOnline;
  }

  /** Store and forward now: DDATA kept and their payload bytes (0 with the history ring). */
  get stored(): { readonly messages: number; readonly bytes: number } {
    return { messages: this.#storeLength(), bytes: this.#storeBytes };
  }

  /**
   * With the history ring: data that did not go out waits in the ring for a replay, is being
   * replayed, or waits for its device's next DBIRTH (#replayAfterBirth) (always false with the
   * queue: see `stored`).
   */
  get replayPending(): boolean {
    return this.#outage !== null || this.#walkHead < this.#walks.length ||
      this.#replayAfterBirth.size > 0;
  }

  /**
   * With the history ring: the earliest outage start waiting for a replay (epoch ms), that of a
   * device waiting for its next DBIRTH (#replayAfterBirth) included, or null.
   */
  get outageStartMs(): number | null {
    if (this.#outage === null && this.#replayAfterBirth.size === 0) return null;
    let min = Infinity;
    for (const t of this.#outage?.values() ?? []) min = Math.min(min, t.atMs);
    for (const t of this.#replayAfterBirth.values()) min = Math.min(min, t.atMs);
    return min;
  }

  /**
   * Follows the runtime from now on (its events, the inventory), not connecting yet: a node
   * metric's change from here on reaches the host's history after the first births (#keepNode).
   * start() does it when it was not done before.
   */
  watch(): void {
    if (this.#watching || this.#stopped) return;
    this.#watching = true;
    const o = this.#o;
    this.#unbornNode = this.#nodeState();
    this.#unsubscribe.push(o.bus.subscribe((e) => this.#onEvent(e)));
    // Coalesced with the bus event of the same change (#nodeSoon: one NDATA).
    if (o.statusChanges) this.#unsubscribe.push(o.statusChanges(() => this.#nodeSoon()));
    for (const p of o.inventory.providers()) {
      this.#noteUp(p.id);
      this.#noteUnits(p.id);
    }
    this.#unsubscribe.push(o.inventory.onChange((id) => {
      this.#noteUp(id);
      this.#noteUnits(id);
      this.#providerChanged(id);
    }));
    this.#unsubscribe.push(o.inventory.onAvailability((p) => {
      this.#noteUp(p.id);
      this.#providerChanged(p.id);
    }));
  }

  /** Follows the runtime (watch()) and opens the broker session (connecting in the background). */
  async start(): Promise<void> {
    const o = this.#o;
    this.watch();
    if (o.bdSeqStore !== undefined) await this.#bdSeqAtStart(o.bdSeqStore);
    if (this.#stopped || this.#startEnded) return;
    await this.#openSession();
    const host = o.config.primaryHostId === ""
      ? ""
      : `; births wait for primary host ${o.config.primaryHostId} to be online`;
    this.#log.info(
      `sparkplug edge node ${o.config.groupId}/${o.edgeNodeId} connecting to the broker ` +
        `(keep-alive ${o.config.keepAliveS} s${host})`,
    );
  }

  /**
   * The bdSeq of the first connection: the next after the last process's (its will may still be
   * due at the broker), recorded before it is used. A store that does not answer (a hung disk
   * under runtime.data_dir) is waited for BDSEQ_SAVE_WAIT_MS at most, WARNed: the node connects
   * with the bdSeq it has (a restart may reuse it), and a load answering later changes nothing.
   * stop() and endStart() end the wait: a load answering after them records nothing either.
   */
  async #bdSeqAtStart(store: BdSeqStore): Promise<void> {
    let late = false;
    const recorded = (async () => {
      const last = await store.load().catch(() => null);
      // Answered past the wait (late), or after stop() or endStart(): nothing is recorded. Ended,
      // the node never connects (no bdSeq of it used), and a save would land after the kernel's
      // stop read bdSeqSaving: in a data_dir whose lock it released, after `runtime stopped`.
      if (late || this.#stopped || this.#startEnded) return;
      if (last !== null) {
        this.#ownBdSeqs.push(last);
        this.#bdSeq = (last + 1) % 256;
      }
      await this.#saveBdSeq();
    })();
    const clock = this.#o.clock;
    let timer: unknown = undefined;
    const outcome = await new Promise<"recorded" | "late" | "stopped">((resolve) => {
      this.#wake = () => resolve("stopped");
      timer = clock.setTimer(() => resolve("late"), BDSEQ_SAVE_WAIT_MS);
      recorded.then(() => resolve("recorded"), () => resolve("recorded"));
    });
    this.#wake = null;
    clock.clearTimer(timer);
    if (outcome !== "late") return;
    late = true;
    this.#log.warn(
      `sparkplug: the bdSeq store did not answer within ${BDSEQ_SAVE_WAIT_MS} ms ` +
        `(BDSEQ_SAVE_WAIT_MS); connecting with bdSeq ${this.#bdSeq} anyway: a restart may reuse it`,
    );
  }

  /** A new broker session (its will: NDEATH with the current bdSeq); connects in the background. */
  async #openSession(): Promise<void> {
    const o = this.#o;
    const session = await o.connect({
      url: o.config.brokerUrl,
      clientId: o.clientId,
      keepAliveS: o.config.keepAliveS,
      connectTimeoutMs: o.config.connectTimeoutMs,
      reconnectMs: o.config.reconnectMs,
      username: o.username,
      password: o.password,
      ca: o.tls?.ca,
      cert: o.tls?.cert,
      key: o.tls?.key,
      will: { topic: this.#topic("NDEATH"), payload: this.#deathPayload() },
    });
    if (this.#stopped || this.#startEnded) {
      await session.end(true);
      return;
    }
    this.#session = session;
    // A session this node has left behind (primary host offline, a lost connection) is no longer
    // heard, but for an NCMD e-stop (#staleMessage): the client may hand on what it read before
    // its end.
    const current = () => this.#session === session;
    session.onConnect(() => this.#contain("connect", () => current() && this.#connected()));
    session.onClose((willUsed) =>
      this.#contain("connection closed", () => current() && this.#closed(willUsed))
    );
    session.onMessage((topic, payload, retained) =>
      this.#contain(
        `message on ${topic}`,
        () =>
          current()
            ? this.#message(topic, payload, retained)
            : this.#staleMessage(topic, payload, retained),
      )
    );
    session.onError((m) => {
      // Once per distinct message across sessions too: each unanswered CONNECT opens a new one,
      // and a close may carry one of two errors in turn (a read's and a write's ECONNRESET).
      if (!current() || this.#brokerErrorsSaid.has(m)) return;
      if (this.#brokerErrorsSaid.size >= BROKER_ERRORS_SAID) {
        this.#log.debug(`sparkplug broker connection: ${m}`);
        return;
      }
      this.#brokerErrorsSaid.add(m);
      this.#log.warn(`sparkplug broker connection: ${m}`);
    });
  }

  /**
   * Runs one entry into the edge node from outside its caller's stack (a broker callback,
   * deferred work, a write's completion) and contains what its own code throws or rejects: the
   * error is counted (`internalErrors`, runtime_sparkplug_internal_errors_total) and logged at
   * ERROR with its stack, and the node goes on. Uncontained, such an error is an unhandled
   * rejection, which ends the whole runtime (main.ts: `crash:`), its HTTP API and e-stop route
   * with it: a bug in the plant link must not take the control path down. (The event bus and the
   * inventory contain their listeners the same way.) A host that distrusts what followed may ask
   * for a Rebirth.
   */
  #contain(what: string, work: () => unknown): void {
    const failed = (err: unknown) => {
      this.counts.internalErrors++;
      const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
      this.#log.error(`sparkplug: internal error in ${what} (the node goes on): ${text}`);
    };
    try {
      const result = work();
      if (result instanceof Promise) result.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  /**
   * Records the current bdSeq (a failure is a WARN once per failing spell: the node goes on, a
   * restart may reuse it; the save that works again is an INFO saying how many failed).
   * One save at a time, and only the latest value waits behind it: connections flapping faster
   * than the store writes (or a stalled disk) queue nothing more, and the last recorded is the
   * latest. Resolves once the bdSeq of the moment is recorded (or failed).
   */
  #saveBdSeq(): Promise<void> {
    this.#bdSeqSaving ??= this.#recordBdSeq();
    return this.#bdSeqSaving;
  }

  async #recordBdSeq(): Promise<void> {
    const store = this.#o.bdSeqStore;
    try {
      while (store !== undefined && this.#bdSeqRecorded !== this.#bdSeq) {
        const bdSeq = this.#bdSeq;
        try {
          await store.save(bdSeq);
          this.#bdSeqRecorded = bdSeq;
        } catch (err) {
          // Once per failing spell: a broker that flaps on a full disk would otherwise log a
          // WARN per reconnect, each line taking more of the disk that is full.
          this.#bdSeqSaves.fail(
            `sparkplug: could not record bdSeq ${bdSeq} (${errorMessage(err)})`,
          );
          return; // tried again at the next change
        }
        this.#bdSeqSaves.ok(String(bdSeq));
      }
    } finally {
      this.#bdSeqSaving = null;
    }
  }

  /**
   * Ends a start() still under way (its bdSeq store not answered): it opens no broker session,
   * whatever the store answers later. A failed start's stop (Kernel: the cache detached at once)
   * does it before its HTTP drain, which may wait seconds: no births of frozen values then, and
   * no NDEATH right after. A session already opened is left to stop(). Idempotent.
   */
  endStart(): void {
    if (this.#session !== null) return;
    this.#startEnded = true;
    this.#wake?.();
  }

  /**
   * The runtime is stopping: from now on no DCMD is carried out (each is refused and answered
   * RUNTIME_STOPPING while the node is still online), as the HTTP API refuses a call and the tree
   * is halted from the stop's first step on -- the node's own stop (its NDEATH) comes only after
   * the HTTP server's drain, which may take seconds. An NCMD e-stop is still taken, and a Rebirth
   * answered. Idempotent.
   */
  closeCommands(): void {
    this.#commandsClosed = true;
  }

  /** Publishes NDEATH (bounded in time) and ends the session. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    // Dead to the group from its NDEATH on: nothing queued meanwhile (a poll pass's DDATA due, a
    // birth waiting, what a completed write starts while the session ends) goes out after it.
    this.#born = false;
    this.#wake?.();
    if (this.#clockRetry !== null) this.#o.clock.clearTimer(this.#clockRetry);
    this.#clockRetry = null;
    if (this.#rebirthTimer !== null) this.#o.clock.clearTimer(this.#rebirthTimer);
    this.#rebirthTimer = null;
    for (const u of this.#unsubscribe.splice(0)) u();
    const session = this.#session;
    if (session === null) return;
    if (session.connected && await this.#publishDeath(session)) await this.#endGracefully(session);
    else await session.end(true);
    this.#log.info("sparkplug edge node stopped");
  }

  /**
   * Publishes NBIRTH and every DBIRTH again on the current connection (Node Control/Rebirth).
   * With MAX_IN_FLIGHT writes unconfirmed it waits (#rebirthBehind) for a write to complete:
   * requests meanwhile are one rebirth, not births beyond the bound.
   */
  rebirth(): void {
    // Not before the first births (e.g. while waiting for the primary host).
    if (!this.online) return;
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      this.#rebirthBehind = true;
      return;
    }
    this.#births();
  }

  /**
   * An NCMD Rebirth (#nodeCommand). Honoured, but folded: while a birth set is still going out
   * (a write of its NBIRTH or DBIRTHs not settled), within MIN_REBIRTH_INTERVAL_MS of the last
   * Rebirth's births, or while one is already due after them, the request is answered by ONE
   * birth set once they have gone out and the interval is over, not one per request -- a host
   * that asks again and again (a storm of NCMDs) gets at most one set per interval.
   */
  #rebirthAsked(): void {
    // One is due already (after the births going out, or a write at MAX_IN_FLIGHT): this request
    // is answered by it.
    if (this.#rebirthFolded || this.#rebirthBehind) return;
    if (this.#birthSetOut()) {
      this.#rebirthFolded = true;
      this.#log.info(
        "sparkplug: Node Control/Rebirth requested while births are going out; one set of " +
          "births follows them (further requests meanwhile are answered by it)",
      );
      return;
    }
    const wait = this.#rebirthWaitMs();
    if (wait > 0) {
      this.#rebirthFolded = true;
      this.#rebirthTimer ??= this.#o.clock.setTimer(this.#rebirthDue, wait);
      this.#log.info(
        `sparkplug: Node Control/Rebirth requested within ${MIN_REBIRTH_INTERVAL_MS} ms ` +
          `(MIN_REBIRTH_INTERVAL_MS) of the last one's births; one set of births follows in ` +
          `${Math.ceil(wait)} ms (further requests meanwhile are answered by it)`,
      );
      return;
    }
    this.#log.info("sparkplug: Node Control/Rebirth requested; publishing births");
    this.rebirth();
  }

  /**
   * How long a Rebirth's births wait still: MIN_REBIRTH_INTERVAL_MS from the start of the last
   * Rebirth's births, 0 when over or none. 0 too when the monotonic clock fails (#monoRead): the
   * set in flight still folds a storm, and a Rebirth is not left waiting on a clock.
   */
  #rebirthWaitMs(): number {
    if (this.#rebirthAtMono === null) return 0;
    const now = this.#monoRead("a Rebirth's interval (MIN_REBIRTH_INTERVAL_MS)");
    if (now === null) return 0;
    return Math.max(0, this.#rebirthAtMono + MIN_REBIRTH_INTERVAL_MS - now);
  }

  /** MIN_REBIRTH_INTERVAL_MS after the last Rebirth's births: the folded Rebirth is answered. */
  readonly #rebirthDue = (): void => {
    this.#rebirthTimer = null;
    this.#contain("a Rebirth", this.#foldedRebirth);
  };

  /** Whether the latest birth set of this session still has writes not settled. */
  #birthSetOut(): boolean {
    const set = this.#birthSet;
    return set !== null && set.session === this.#session && set.writes > 0;
  }

  /**
   * The birth set a folded Rebirth waited for has gone out: its births now (rebirth(), under the
   * in-flight bound as any). Once: births published otherwise meanwhile (a new connection's)
   * answered it already (#births clears the flag).
   */
  readonly #foldedRebirth = (): void => {
    if (!this.#rebirthFolded || this.#birthSetOut()) return;
    // Within the interval: the timer answers it (armed once per folded Rebirth).
    const wait = this.#rebirthWaitMs();
    if (wait > 0) {
      if (!this.#stopped) this.#rebirthTimer ??= this.#o.clock.setTimer(this.#rebirthDue, wait);
      return;
    }
    this.#rebirthFolded = false;
    this.rebirth();
  };

  // ---- connection ----

  async #connected(): Promise<void> {
    if (this.#stopped) return;
    this.counts.connects++;
    this.#accepted = true;
    this.#bornAtMono = null;
    this.#unansweredConnects = 0;
    // Within a stretch of connections closed at their births the same error is said once.
    if (this.#birthLosses < BIRTH_LOSSES_BEFORE_BACKOFF) this.#brokerErrorsSaid.clear();
    const o = this.#o;
    const session = this.#session!;
    const host = o.config.primaryHostId;
    this.#subscribed = false;
    // The broker hands this connection's new subscriptions their retained copies again.
    this.#retainedWarned.clear();
    this.#retainedOverWarned = false;
    // The host's retained STATE says again, on this connection, whether it is online.
    this.#hostOnline = host === "";
    this.#nbirthOverBytes = null;
    this.#birthsSent = 0;
    this.#birthsHeard = 0;
    // Its own NBIRTH, to hear one it did not publish (#ownBirthSeen), in a SUBSCRIBE of its own: a
    // broker whose ACL refuses it (SUBACK 0x80, which MQTT.js reports as the whole call's error)
    // costs that check only, not a false "NCMD/DCMD failed" at every connection.
    const ownBirths = session.subscribe([topicOf(o.config.groupId, "NBIRTH", o.edgeNodeId)], 0)
      .then(() => null, (err: unknown) => err);
    try {
      await session.subscribe([
        topicOf(o.config.groupId, "NCMD", o.edgeNodeId),
        `${topicOf(o.config.groupId, "DCMD", o.edgeNodeId)}/+`,
        ...(host === "" ? [] : [stateTopic(host), legacyStateTopic(host)]),
      ], 1);
    } catch (err) {
      this.#log.warn(`sparkplug: subscribing to NCMD/DCMD/STATE failed: ${errorMessage(err)}`);
    }
    const refused = await ownBirths;
    if (refused !== null && !this.#ownBirthsRefusedSaid) {
      this.#ownBirthsRefusedSaid = true;
      this.#log.warn(
        `sparkplug: subscribing to this node's own NBIRTH topic failed: ${
          errorMessage(refused)
        }; ` +
          `another client publishing as this edge node is not detected ` +
          `(runtime_sparkplug_foreign_births_total stays 0; said once)`,
      );
    }
    if (this.#stopped || this.#session !== session || !session.connected) return;
    this.#subscribed = true;
    this.#log.info(
      `sparkplug connected to the broker (bdSeq ${this.#bdSeq})` +
        (this.#hostOnline ? "" : `; waiting for primary host ${host} to be online`),
    );
    this.#maybeBirth();
  }

  /** The births, once connected, subscribed and (with a primary host) the host is online. */
  #maybeBirth(): void {
    if (this.#stopped || this.#born || this.#leaving || !this.#subscribed) return;
    if (!this.#hostOnline || !this.#session?.connected) return;
    this.#births();
  }

  // ---- the primary host's STATE ----

  /** A STATE message of the primary host (3.0 JSON, or the older ONLINE/OFFLINE text). */
  #hostState(topic: string, payload: Uint8Array): void {
    const host = this.#o.config.primaryHostId;
    const text = new TextDecoder().decode(payload).trim();
    let online: boolean;
    let timestamp: number | null = null;
    if (topic === stateTopic(host)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
      const p = parsed as { online?: unknown; timestamp?: unknown } | null;
      if (p === null || typeof p !== "object" || typeof p.online !== "boolean") {
        return this.#stateIgnored(
          topic,
          `not a STATE payload: ${quoteProviderTextWithin(text, STATE_TEXT_QUOTED_CHARS)}`,
        );
      }
      online = p.online;
      if (typeof p.timestamp === "number" && Number.isFinite(p.timestamp)) timestamp = p.timestamp;
      this.#hostSpeaks3 = true;
    } else if (this.#hostSpeaks3) {
      // A host that publishes 3.0 STATE is followed there only: what its earlier version left
      // retained on the legacy topic (its OFFLINE will) comes with every new subscription and
      // would end every session right after its births.
      return this.#stateIgnored(
        topic,
        `the host publishes Sparkplug 3.0 STATE on ${stateTopic(host)}: ` +
          `${
            quoteProviderTextWithin(text, STATE_TEXT_QUOTED_CHARS)
          } on the legacy topic is not followed`,
      );
    } else if (text === "ONLINE" || text === "OFFLINE") {
      online = text === "ONLINE";
    } else {
      return this.#stateIgnored(
        topic,
        `not ONLINE or OFFLINE: ${quoteProviderTextWithin(text, STATE_TEXT_QUOTED_CHARS)}`,
      );
    }
    if (timestamp !== null) {
      // Sparkplug 3.0: a host's birth and its will carry the same timestamp, so only an older
      // one is stale (a late retained message of an earlier session).
      if (timestamp < this.#hostTimestamp) {
        // Kept for the life of the process (TCK message-flow-edge-node-birth-publish-phid-wait-
        // timestamp): an `online` ignored while the births wait for one says so, and the way out.
        const waiting = online && !this.#hostOnline
          ? `; the births wait for a STATE online at or after ${this.#hostTimestamp} (a host ` +
            "whose clock is behind the one it had: restart the runtime to follow it now)"
          : "";
        return this.#stateIgnored(
          topic,
          `timestamp ${timestamp} is older than ${this.#hostTimestamp} already seen${waiting}`,
        );
      }
      this.#hostTimestamp = timestamp;
    }
    const was = this.#hostOnline;
    this.#hostOnline = online;
    if (online) {
      if (!was) this.#log.info(`sparkplug: primary host ${host} is online`);
      this.#maybeBirth();
    } else if (was) {
      this.#log.warn(`sparkplug: primary host ${host} is offline`);
      if (this.#born) this.#contain("leaving for the primary host", () => this.#leaveForHost());
    }
  }

  #stateIgnored(topic: string, why: string): void {
    this.counts.hostStatesIgnored++;
    const n = this.counts.hostStatesIgnored;
    if (n <= 10 || n % 1000 === 0) {
      this.#log.warn(`sparkplug: STATE on ${topic} ignored (${n} so far): ${why}`);
    }
  }

  /**
   * The primary host went offline: NDEATH (bounded in time), the session ended without a
   * DISCONNECT (Sparkplug 3.0: the broker's will follows, the same bdSeq), then a new session
   * with the next bdSeq that waits for the host again. Data goes to store and forward meanwhile.
   */
  async #leaveForHost(): Promise<void> {
    const session = this.#session;
    if (session === null || this.#leaving || this.#stopped) return;
    this.#leaving = true;
    this.#born = false;
    this.#dropAnswersWaiting();
    this.#keepBehind();
    this.#replayBack();
    this.#dropAnswersAfterBirth();
    this.counts.hostOfflineDisconnects++;
    try {
      await this.#publishDeath(session);
      if (this.#stopped) return; // stop() ends the session
      this.#log.warn(
        `sparkplug: NDEATH published for the primary host going offline; reconnecting ` +
          `(next bdSeq ${(this.#bdSeq + 1) % 256}) to wait for it`,
      );
      await this.#renew(session, 0);
    } catch (err) {
      this.#log.error(`sparkplug: reconnecting after the primary host left: ${errorMessage(err)}`);
    } finally {
      this.#leaving = false;
    }
  }

  /** Ends `session` gracefully, or by force once STOP_END_TIMEOUT_MS passed. */
  async #endGracefully(session: MqttSession): Promise<void> {
    let timer: unknown;
    const ended = await Promise.race([
      session.end(false).then(() => true),
      new Promise<false>((r) => {
        timer = this.#o.clock.setTimer(() => r(false), STOP_END_TIMEOUT_MS);
      }),
    ]);
    this.#o.clock.clearTimer(timer);
    if (ended) return;
    this.#log.warn(
      `sparkplug: the session did not end within ${STOP_END_TIMEOUT_MS} ms ` +
        `(STOP_END_TIMEOUT_MS: writes not acknowledged); ended by force`,
    );
    await session.end(true);
  }

  /** NDEATH on `session`, QoS 1, bounded by STOP_PUBLISH_TIMEOUT_MS; whether it was written. */
  #publishDeath(session: MqttSession): Promise<boolean> {
    // One NDEATH per session: stop() while #leaveForHost writes it waits for that one.
    if (this.#death?.session !== session) {
      this.#death = { session, sent: this.#writeDeath(session) };
    }
    return this.#death.sent;
  }

  async #writeDeath(session: MqttSession): Promise<boolean> {
    let timer: unknown;
    const sent = await Promise.race([
      session.publish(this.#topic("NDEATH"), this.#deathPayload(), 1).then(
        () => true,
        () => false,
      ),
      new Promise<false>((r) => {
        timer = this.#o.clock.setTimer(() => r(false), STOP_PUBLISH_TIMEOUT_MS);
      }),
    ]);
    this.#o.clock.clearTimer(timer);
    return sent;
  }

  /** `willUsed`: the attempt's CONNECT reached the broker (accepted, or not answered). */
  #closed(willUsed: boolean): void {
    const accepted = this.#accepted;
    this.#accepted = false;
    this.#born = false;
    this.#subscribed = false;
    // Answers to the commands of a connection that is gone: the host saw its NDEATH (an
    // e-stop's is kept for the next births).
    this.#dropAnswersWaiting();
    if (!this.#stopped) {
      this.#keepBehind();
      this.#replayBack();
    }
    this.#dropAnswersAfterBirth();
    // #devices stays: what changes while offline is stored under their aliases.
    if (this.#stopped) return;
    if (accepted || willUsed) {
      // The broker published (or holds) this connection's will, NDEATH with its bdSeq, births or
      // not (a node waiting for its primary host), CONNACK or not (a CONNECT it got and never
      // answered in connect_timeout_ms may still register its will): the next CONNECT has the
      // next bdSeq (Sparkplug 3.0: one more per MQTT CONNECT). An attempt that never reached the
      // broker (refused, unreachable) used no will: the client retries it as it is.
      let delayMs = this.#o.config.reconnectMs;
      if (accepted) {
        this.#unansweredConnects = 0;
        delayMs = this.#afterBirthLoss();
        const line = `sparkplug lost the broker; reconnecting (next bdSeq ${
          (this.#bdSeq + 1) % 256
        }${delayMs === this.#o.config.reconnectMs ? "" : ` in ${delayMs} ms`})`;
        // Said once per stretch of connections closed at their births (#afterBirthLoss).
        if (this.#birthLosses > BIRTH_LOSSES_BEFORE_BACKOFF) this.#log.debug(line);
        else this.#log.warn(line);
      } else {
        // Something that takes CONNECTs and never answers (a stalled broker, a wrong port) is
        // met every reconnect_ms: the first of a stretch is WARNed, then every 100th.
        const n = ++this.#unansweredConnects;
        if (n === 1 || n % 100 === 0) {
          this.#log.warn(
            `sparkplug: the broker did not answer the CONNECT (no CONNACK; ${n} in a row); ` +
              `reconnecting (next bdSeq ${(this.#bdSeq + 1) % 256})`,
          );
        }
      }
      const session = this.#session!;
      this.#contain("reconnecting", () => this.#renew(session, delayMs));
    }
  }

  /**
   * An accepted connection closed: whether the broker closed it at its births, and how long to
   * wait before the next one. A broker that refuses a birth (a DBIRTH beyond its packet size
   * bound) closes every connection right after its births: without a bound the node would
   * reconnect every reconnect_ms for ever, a bdSeq and its save, an NBIRTH and an NDEATH at the
   * host, and log lines each time. From BIRTH_LOSSES_BEFORE_BACKOFF such closes in a row the wait
   * doubles up to MAX_BIRTH_LOSS_DELAY_MS, and one WARN names the largest message written (a
   * birth, or a DDATA the replay after the births writes again); a connection that held past
   * BIRTH_LOSS_WINDOW_MS ends the stretch.
   */
  #afterBirthLoss(): number {
    const reconnectMs = this.#o.config.reconnectMs;
    const bornAt = this.#bornAtMono;
    this.#bornAtMono = null;
    if (bornAt === null) return reconnectMs; // closed before its births: says nothing of them
    // The connection's age unknown (the monotonic clock failing): neither a loss nor a hold; the
    // next connection at reconnect_ms, the stretch as it was.
    const now = this.#monoRead("the age of a connection closed after its births");
    if (now === null) return reconnectMs;
    if (now - bornAt >= BIRTH_LOSS_WINDOW_MS) {
      this.#birthLosses = 0;
      this.#largestWrite = null;
      return reconnectMs;
    }
    const n = ++this.#birthLosses;
    if (n < BIRTH_LOSSES_BEFORE_BACKOFF) return reconnectMs;
    const delayMs = Math.max(
      reconnectMs,
      Math.min(reconnectMs * 2 ** (n - BIRTH_LOSSES_BEFORE_BACKOFF + 1), MAX_BIRTH_LOSS_DELAY_MS),
    );
    if (n === BIRTH_LOSSES_BEFORE_BACKOFF) {
      const largest = this.#largestWrite;
      this.#log.warn(
        `sparkplug: the broker closed the connection within ${BIRTH_LOSS_WINDOW_MS} ms ` +
          `(BIRTH_LOSS_WINDOW_MS) of its births ${n} times in a row; the largest message written is ` +
          (largest === null ? "unknown" : `${largest.topic}, ${largest.bytes} bytes of payload`) +
          ` (a broker whose packet size bound is below a message, such as Mosquitto's ` +
          `max_packet_size, closes the connection of a client that publishes it); or another ` +
          `client connected with this node's client id ${JSON.stringify(this.#o.clientId)} (the ` +
          `broker closes the older connection: two runtimes with one edge node id or ` +
          `sparkplug.client_id take it from each other); reconnecting ` +
          `with a wait doubling from ${reconnectMs} ms up to ${MAX_BIRTH_LOSS_DELAY_MS} ms ` +
          `(MAX_BIRTH_LOSS_DELAY_MS), said again only after a connection holds`,
      );
    }
    return delayMs;
  }

  /**
   * Ends `session` (its will, the current bdSeq, is due or published at the broker), advances
   * bdSeq and opens the next session once the new bdSeq is recorded (and `delayMs` passed): a
   * CONNECT never carries a bdSeq the store does not hold yet, so a crash at any moment leaves a
   * restart the next one, never one a will of this process already used. A save that fails is
   * WARNed by #recordBdSeq; one that hangs is waited for BDSEQ_SAVE_WAIT_MS at most (WARNed).
   */
  async #renew(session: MqttSession, delayMs: number): Promise<void> {
    // Once per session: a connection lost while #leaveForHost publishes its NDEATH is renewed by
    // whichever comes first (two renewals would open two clients with one client id).
    if (this.#session !== session) return;
    this.#session = null;
    this.#accepted = false;
    await session.end(true);
    if (this.#stopped) return; // the next process starts after the recorded bdSeq
    this.#ownBdSeqs.push(this.#bdSeq);
    if (this.#ownBdSeqs.length > OWN_BDSEQS_KEPT) this.#ownBdSeqs.shift();
    this.#bdSeq = (this.#bdSeq + 1) % 256;
    const bdSeq = this.#bdSeq;
    const clock = this.#o.clock;
    let waits = 2; // the save (or its bound) and the delay
    const timers: unknown[] = [];
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      let saved = false;
      const done = () => {
        if (--waits === 0) resolve();
      };
      const save = (late: boolean) => {
        if (saved) return;
        saved = true;
        if (late) {
          this.#log.warn(
            `sparkplug: bdSeq ${bdSeq} not recorded within ${BDSEQ_SAVE_WAIT_MS} ms ` +
              `(BDSEQ_SAVE_WAIT_MS); reconnecting anyway: a restart may reuse it`,
          );
        }
        done();
      };
      if (delayMs > 0) timers.push(clock.setTimer(done, delayMs));
      else done();
      timers.push(clock.setTimer(() => save(true), BDSEQ_SAVE_WAIT_MS));
      void this.#saveBdSeq().then(() => save(false));
    });
    this.#wake = null;
    for (const t of timers) clock.clearTimer(t);
    if (this.#stopped || this.#startEnded) return;
    await this.#openSession();
  }

  // ---- births and deaths ----

  #births(): void {
    // Dated before anything changes: births the clock cannot date wait for it (#clockRetried),
    // the node as it was (unborn: data to store and forward; born: on its previous births).
    const now = this.#wallNow("the births (NBIRTH)");
    if (now === null) {
      // Born (a Rebirth): asked again as one that waited for the writes (#afterWrite).
      if (this.#born) this.#rebirthBehind = true;
      else this.#birthsUndated = true;
      return;
    }
    this.#birthsUndated = false;
    if (this.#nbirthTooLarge(now)) return;
    // Born already: these births answer a Rebirth; the next waits for MIN_REBIRTH_INTERVAL_MS.
    if (this.#born) this.#rebirthAtMono = this.#monoNow("a Rebirth's births");
    this.#rebirthBehind = false;
    this.#rebirthFolded = false; // these births answer a Rebirth that waited for the last ones
    this.#providersBehind.clear(); // every device is born again as it is now
    this.#seq = 0;
    this.#devices.clear();
    this.#pending.clear();
    this.counts.births++;
    if (this.#bornAtMono === null) {
      // This connection's first births: the largest write is of this stretch (#afterBirthLoss).
      if (this.#birthLosses === 0) this.#largestWrite = null;
      this.#bornAtMono = this.#monoNow("the births (NBIRTH)");
    }
    const status = this.#nodeState();
    const first = this.#lastNode === null;
    this.#lastNode = status;
    this.#unbornNode = null;
    this.#nodeBehind = false;
    this.#nodeBehindSince = null;
    // The first births: a change since watch() that the NBIRTH carries is not history to send.
    if (first) this.#dropCarriedByBirth(this.#nodeMetrics(status, null, now, true));
    // E-stop answers kept while the clock failed: history, dated by this read that works.
    this.#datedEstopAnswers(now);
    // The set's writes are counted (#send) until they settle: a Rebirth meanwhile waits for them.
    const set: BirthSet = { session: this.#session, writes: 0 };
    this.#birthSet = this.#birthSetOpen = set;
    const tooLargeBefore = new Set(this.#tooLarge.keys());
    try {
      if (this.#send("NBIRTH", undefined, this.#nbirthPayload(now, status), true)) {
        this.#birthsSent++;
      }
      this.#born = true;
      for (const p of this.#o.inventory.providers()) {
        if (!p.available) continue;
        for (const caps of p.devices) {
          tooLargeBefore.delete(sparkplugDeviceId(caps.device.providerId, caps.device.deviceId));
          this.#deviceBirth(caps, now); // the births' time: they are one moment
        }
      }
    } finally {
      this.#birthSetOpen = null;
    }
    // Devices held back for their size that are gone: their spell ends. One whose provider is
    // down keeps it (#providerChanged).
    for (const id of tooLargeBefore) {
      const providerId = this.#tooLarge.get(id)?.providerId;
      if (providerId !== undefined && this.#providerDown(providerId)) continue;
      this.#tooLarge.delete(id);
    }
    this.#dropReplaysNotBorn();
    // Answers that waited for a birth follow it (every provider's devices are born now).
    for (const providerId of [...this.#answersAfterBirth.keys()]) this.#answersBorn(providerId);
    // Devices not born again (removed by a reload, gone while away) leave their aliases.
    this.#pruneAliases();
    // What the node metrics went through while the node was away (the births carry them now).
    this.#drainNode();
    this.#drain();
    // The ring's changes since the outage, up to these births (their values are current).
    if (this.#outage !== null) this.#startReplay();
    this.#pump();
  }

  /** The NBIRTH: bdSeq, the node controls and metrics, the runtime's version. */
  #nbirthPayload(now: number, status: NodeState): Payload {
    return {
      timestamp: now,
      metrics: [
        {
          name: NODE_METRICS.bdSeq,
          timestamp: now,
          datatype: DataType.UInt64,
          long_value: this.#bdSeq,
        },
        {
          name: NODE_METRICS.rebirth,
          alias: this.#alias("", NODE_METRICS.rebirth),
          timestamp: now,
          datatype: DataType.Boolean,
          boolean_value: false,
        },
        // Offered only where it is taken: not with commands off, nor with role viewer.
        ...(this.#commandRefusal() !== null ? [] : [{
          name: NODE_METRICS.estop,
          alias: this.#alias("", NODE_METRICS.estop),
          timestamp: now,
          datatype: DataType.Boolean,
          boolean_value: false,
        }]),
        ...this.#nodeMetrics(status, null, now, true),
        {
          name: NODE_METRICS.commandResult,
          alias: this.#alias("", NODE_METRICS.commandResult),
          timestamp: now,
          datatype: DataType.String,
          string_value: "",
        },
        {
          name: NODE_METRICS.version,
          alias: this.#alias("", NODE_METRICS.version),
          timestamp: now,
          datatype: DataType.String,
          string_value: this.#o.runtimeVersion,
        },
      ],
    };
  }

  /**
   * At the first births: a node metric whose only change kept since watch() (#keepNode) is to
   * the value the NBIRTH carries loses that change. The host never had the value before it (the
   * metrics at watch() are not published), so its NDATA would show no transition, only the
   * NBIRTH's value from an earlier time: noise (an operator arming the runtime while the births
   * wait). The host's history of that metric starts at the NBIRTH. A metric that changed more
   * than once keeps every change: the values between are not in the NBIRTH, and the last one
   * ends the one before at its time (a latch cleared before the births). NCMD e-stop answers
   * kept stay (not a status metric: `birth` holds the NBIRTH's status metrics alone).
   */
  #dropCarriedByBirth(birth: readonly Metric[]): void {
    const changes = new Map<number, number>();
    for (const k of this.#nodeKept) {
      for (const m of k.metrics) {
        const a = Number(m.alias);
        changes.set(a, (changes.get(a) ?? 0) + 1);
      }
    }
    const carried = new Set<number>();
    for (const m of birth) {
      const a = Number(m.alias);
      if (changes.get(a) !== 1) continue;
      const kept = this.#nodeKept.flatMap((k) => k.metrics).find((x) => Number(x.alias) === a)!;
      if (scalarOf(kept) === scalarOf(m)) carried.add(a);
    }
    if (carried.size === 0) return;
    this.#nodeKept = this.#nodeKept
      .map((k) => ({ ...k, metrics: k.metrics.filter((m) => !carried.has(Number(m.alias))) }))
      .filter((k) => k.metrics.length > 0);
  }

  /**
   * A device's DBIRTH (or, too large, its DDEATH if born: #birthTooLarge), dated `at` (the births')
   * or at its own clock read. False when a clock read failed: nothing changed, its provider waits
   * in #providersBehind (compared again at the next completed write or #clockRetried).
   */
  #deviceBirth(caps: DeviceCapabilities, at?: number): boolean {
    const { providerId, deviceId } = caps.device;
    const id = sparkplugDeviceId(providerId, deviceId);
    const now = at ?? this.#wallNow("a device's birth (DBIRTH)");
    if (now === null) {
      this.#providersBehind.add(providerId);
      return false;
    }
    const mono = this.#monoNow("a device's birth (DBIRTH)");
    const metrics: Metric[] = [];
    // A signal named as a metric the node makes for the device (a declared function's, the
    // type's) is not born: one name and alias would stand for two metrics of two datatypes.
    const made = new Set([
      DEVICE_TYPE_METRIC,
      ...caps.functions.map((f) => functionMetricName(f.name)),
    ]);
    const signals = caps.signals.filter((s) => !made.has(s.signalId));
    this.#sayClash(id, caps.signals.filter((s) => made.has(s.signalId)).map((s) => s.signalId));
    for (const s of signals) {
      const state = this.#o.reads.signal(providerId, deviceId, s.signalId);
      metrics.push(
        signalBirthMetric(
          s,
          this.#alias(id, s.signalId),
          state?.value ?? null,
          // As GET /v0/state reads it: an OK sample past its bound is STALE, not Good.
          state === undefined
            ? "UNAVAILABLE"
            : this.#o.reads.qualityNow(providerId, deviceId, s.signalId, state),
          // When the runtime received the value (its age on the monotonic clock), as DDATA are
          // stamped with the poll's time: never the provider's timestamp, whose clock may be
          // anywhere (a year ahead, 1970 on a board without a real-time clock).
          state === undefined ? now : Math.round(now - Math.max(0, mono - state.receivedMono)),
        ),
      );
    }
    // A name declared twice is one metric, the last declaration: the one a call by name reaches.
    for (const [i, f] of caps.functions.entries()) {
      if (caps.functions.findLastIndex((g) => g.name === f.name) !== i) continue;
      metrics.push(functionBirthMetric(f, this.#alias(id, `Functions/${f.name}`), now));
    }
    metrics.push({
      name: DEVICE_TYPE_METRIC,
      alias: this.#alias(id, DEVICE_TYPE_METRIC),
      timestamp: now,
      datatype: DataType.String,
      string_value: caps.device.typeId,
      properties: propertySet({
        provider: providerId,
        device: deviceId,
        label: caps.device.label,
        type_version: caps.device.typeVersion,
      }),
    });
    const limit = this.#o.config.maxMessageBytes;
    if (limit !== null) {
      const bytes = mqttPacketBytes(
        this.#topic("DBIRTH", id),
        encode({ timestamp: now, metrics, seq: this.#seq }).length,
        0,
      );
      if (bytes > limit) return this.#birthTooLarge(id, caps, bytes, limit);
    }
    if (this.#tooLarge.delete(id)) {
      this.#log.info(
        `sparkplug: device ${quoteName(id)} is born now (its DBIRTH fits max_message_bytes)`,
      );
    }
    this.#pending.delete(id);
    this.#devices.set(id, {
      providerId,
      deviceId,
      signals: new Set(signals.map((s) => s.signalId)),
      functions: new Set(caps.functions.map((f) => functionMetricName(f.name))),
      types: new Map(signals.map((s) => [s.signalId, s.valueType])),
      units: new Map(signals.map((s) => [s.signalId, s.unit])),
      description: birthDescription(caps),
    });
    this.#send("DBIRTH", id, { timestamp: now, metrics }, true);
    // The rest of a replay its DDEATH interrupted: after this DBIRTH, under its aliases.
    const parked = this.#replayAfterBirth.get(id);
    if (parked !== undefined) {
      this.#replayAfterBirth.delete(id);
      this.#noteOutage(id, parked);
    }
    return true;
  }

  /**
   * A device whose DBIRTH is over `sparkplug.max_message_bytes`: not born (a broker with that
   * bound would close the node's connection at it, taking every other device's data down with
   * it). Born before with smaller capabilities: DDEATH (the host's aliases of it are no longer
   * valid). WARNed once per spell and capabilities; DCMDs to it are refused naming the size
   * (#notBorn). False when its DDEATH waits for the wall clock (#deviceDeath): not held back yet,
   * so that it is measured again when its provider is compared again.
   */
  #birthTooLarge(id: string, caps: DeviceCapabilities, bytes: number, limit: number): boolean {
    const description = birthDescription(caps);
    // The same capabilities again (its provider back, the next births): the same spell. Changed
    // capabilities still too large are a new fact, WARNed with their size.
    const said = this.#tooLarge.get(id)?.description === description;
    if (this.#devices.has(id)) {
      if (!this.#deviceDeath(id)) return false;
    } else {
      this.#pending.delete(id);
      this.#pruneAliases(id);
    }
    this.#tooLarge.set(id, { providerId: caps.device.providerId, bytes, description });
    if (said) return true;
    this.#log.warn(
      `sparkplug: device ${quoteName(id)} not born: its DBIRTH is ${bytes} bytes, over ` +
        `sparkplug.max_message_bytes ${limit} (no DDATA of it; the other devices publish as ` +
        `usual; born once its birth fits, at the next births)`,
    );
    return true;
  }

  /** The packet bytes of the NBIRTH as it would be now when over the bound, else null. */
  #nbirthOverBound(): number | null {
    if (this.#o.config.maxMessageBytes === null) return null;
    // Undated: not measured here; the births it asks for wait for the clock (#births).
    const now = this.#wallNow("the births (NBIRTH)");
    if (now === null) return null;
    const bytes = this.#nbirthBytes(now);
    const limit = this.#o.config.maxMessageBytes;
    return bytes === null || limit === null || bytes <= limit ? null : bytes;
  }

  /** The packet bytes of the NBIRTH dated `now`; null without a bound (not measured). */
  #nbirthBytes(now: number): number | null {
    if (this.#o.config.maxMessageBytes === null) return null;
    return mqttPacketBytes(
      this.#topic("NBIRTH"),
      encode({ ...this.#nbirthPayload(now, this.#nodeState()), seq: 0 }).length,
      0,
    );
  }

  /**
   * Why births asked for again on a live connection are not published: the NBIRTH as it is now
   * is `bytes`, over the bound. The births published before stand: the NBIRTH's metrics are the
   * same ones (which node metrics there are is fixed for the process), only longer values, so
   * the host can still read every NDATA and DDATA by the aliases it was given.
   */
  #rebirthTooLargeWhy(bytes: number): string {
    return `its NBIRTH is now ${bytes} bytes, over sparkplug.max_message_bytes ` +
      `${this.#o.config.maxMessageBytes}: births not published again; the node stays online ` +
      `on its previous births (${NBIRTH_TOO_LARGE_CURES})`;
  }

  /**
   * Whether the NBIRTH is over `sparkplug.max_message_bytes`. Before the births of a connection:
   * the node cannot come online. It stays connected without births (its will registered), so it
   * does not reconnect in a loop; said at ERROR once. Measured again at every change of a node
   * metric (#publishNode): once it fits, the births follow, said at INFO. Births asked for again
   * while online (a Rebirth): they are not published and the node stays online on the births it
   * published before (#rebirthTooLargeWhy), said at WARN once until births are published again.
   */
  #nbirthTooLarge(now: number): boolean {
    const measured = this.#nbirthBytes(now);
    const limit = this.#o.config.maxMessageBytes;
    if (measured === null || limit === null || measured <= limit) {
      if (!this.#born && this.#nbirthTooLargeSaid && measured !== null) {
        // The spell the ERROR opened ends: said once, and a later one is said again.
        this.#nbirthTooLargeSaid = false;
        this.#log.info(
          `sparkplug: NBIRTH is now ${measured} bytes, within sparkplug.max_message_bytes ` +
            `${limit}: the node comes online (publishing births)`,
        );
      }
      this.#nbirthOverBytes = null;
      this.#rebirthTooLargeSaid = false;
      return false;
    }
    const bytes = measured;
    if (this.#born) {
      // Answered, by a refusal: not asked again at every write completed (#afterWrite).
      this.#rebirthBehind = false;
      if (!this.#rebirthTooLargeSaid) {
        this.#rebirthTooLargeSaid = true;
        this.#log.warn(`sparkplug: Rebirth: ${this.#rebirthTooLargeWhy(bytes)}`);
      }
      return true;
    }
    this.#nbirthOverBytes = bytes;
    if (!this.#nbirthTooLargeSaid) {
      this.#nbirthTooLargeSaid = true;
      this.#log.error(
        `sparkplug: NBIRTH is ${bytes} bytes, over sparkplug.max_message_bytes ${limit}: the ` +
          `node cannot come online (${NBIRTH_TOO_LARGE_CURES})`,
      );
    }
    return true;
  }

  /**
   * WARNs signals of a device left out of its DBIRTH (named as a metric the node makes for it)
   * once per clash: not again at its next births while its line is the same; a new one (the
   * device's signals or functions changed) is said, and one gone and back is said again. The line
   * is what is kept: a clash changed only among the signals the line counts but does not name is
   * not said again (its line would read the same).
   */
  #sayClash(id: string, clash: readonly string[]): void {
    if (clash.length === 0) {
      this.#forgetClash(id);
      return;
    }
    const line =
      `sparkplug: device ${quoteName(id)}: signals ${
        namedList(clash.map(quoteName), MAX_CLASH_SIGNALS_NAMED)
      } not published (named as a metric the node ` +
      `makes for the device: a function's or ${DEVICE_TYPE_METRIC})`;
    if (this.#clashesSaid.get(id) === line) return;
    this.#forgetClash(id);
    this.#clashesSaid.set(id, line);
    this.#clashTextChars += line.length;
    while (this.#clashesSaid.size > MAX_CLASHES_REMEMBERED) {
      this.#forgetClash(this.#clashesSaid.keys().next().value!);
    }
    this.#log.warn(line);
  }

  /** Forgets the clash line last said for a device (#sayClash). */
  #forgetClash(id: string): void {
    const line = this.#clashesSaid.get(id);
    if (line === undefined) return;
    this.#clashesSaid.delete(id);
    this.#clashTextChars -= line.length;
  }

  /**
   * A device's DDEATH. False when the wall clock cannot date it: nothing changed (the device is
   * still born here), its provider waits in #providersBehind (compared again at the next
   * completed write or #clockRetried) -- a host is not left showing a dead device alive.
   */
  #deviceDeath(id: string): boolean {
    const now = this.#wallNow("a device's death (DDEATH)");
    if (now === null) {
      const providerId = this.#devices.get(id)?.providerId;
      if (providerId !== undefined) this.#providersBehind.add(providerId);
      return false;
    }
    this.#devices.delete(id);
    this.#pending.delete(id);
    this.#parkReplay(id);
    this.#send("DDEATH", id, { timestamp: now, metrics: [] }, true);
    this.#pruneAliases(id);
    return true;
  }

  /**
   * A device leaves with its replay waiting or in progress (or its outage noted, the replay not
   * started): no DDATA of it may follow its DDEATH, so where the replay stands waits for its next
   * DBIRTH (#replayAfterBirth) instead of being dropped when the walk reaches it.
   */
  #parkReplay(id: string): void {
    if (this.#o.replay === undefined) return;
    let start = this.#outage?.get(id) ?? null;
    if (start !== null) {
      this.#outage!.delete(id);
      if (this.#outage!.size === 0) this.#outage = null;
    }
    for (let i = this.#walkHead; i < this.#walks.length; i++) {
      const r = this.#walks[i];
      if (r === null || r === undefined || r.id !== id) continue;
      if (start === null || r.next.seq < start.seq) start = r.next;
      this.#walks[i] = null;
    }
    if (start !== null) this.#parkAt(id, start);
  }

  /**
   * Where the replay of a device that left (DDEATH) goes on after its next DBIRTH: the earlier
   * of `start` and the position already saved (#replayAfterBirth, MAX_REPLAY_WALKS devices).
   */
  #parkAt(id: string, start: OutageStart): void {
    const before = this.#replayAfterBirth.get(id);
    if (before !== undefined && before.seq <= start.seq) return;
    if (before === undefined && this.#replayAfterBirth.size >= MAX_REPLAY_WALKS) {
      this.counts.storeDropped++;
      this.#log.warn(
        `sparkplug store-and-forward: ${
          quoteName(id)
        } left with data not replayed and ${MAX_REPLAY_WALKS} ` +
          `devices already wait to come back (MAX_REPLAY_WALKS): the rest of its replay is dropped`,
      );
      return;
    }
    this.#replayAfterBirth.set(id, start);
    // Its polls written live from there on, kept apart from the memory shared by all devices:
    // those written already, and those still in flight once written (#liveWritten keeps the
    // polls of a device with an entry here, one with none written yet too).
    if (!this.#parkedWritten.has(id)) this.#parkedWritten.set(id, new Set());
    for (let k = 1; k <= this.#liveOutCount; k++) {
      const i = (this.#liveOutNext - k + LIVE_OUT_KEPT) % LIVE_OUT_KEPT;
      if (this.#liveOutIds[i] === id && this.#liveOutSeqs[i]! >= start.seq) {
        this.#keepParkedWritten(id, this.#liveOutSeqs[i]!);
      }
    }
  }

  /** A poll of a device that left (or resumed its replay) written live: see #parkedWritten. */
  #keepParkedWritten(id: string, seq: number): void {
    let kept = this.#parkedWritten.get(id);
    if (kept === undefined) this.#parkedWritten.set(id, kept = new Set());
    if (kept.has(seq)) return;
    if (this.#parkedWrittenCount >= PARKED_WRITTEN_KEPT) this.#pruneParkedWritten();
    if (this.#parkedWrittenCount >= PARKED_WRITTEN_KEPT) {
      // Not silently: once until the memory is empty again (the devices born again and replayed).
      if (!this.#parkedFullWarned) {
        this.#parkedFullWarned = true;
        this.#log.warn(
          `sparkplug store-and-forward: ${PARKED_WRITTEN_KEPT} polls written live of devices ` +
            `waiting for their DBIRTH kept (PARKED_WRITTEN_KEPT): further ones (the first of ` +
            `${quoteName(id)}) are not, and their resumed replay may send them again`,
        );
      }
      return;
    }
    kept.add(seq);
    this.#parkedWrittenCount++;
  }

  /**
   * Forgets the polls written live kept for devices born again whose resumed replay is over (no
   * outage noted, no walk waiting): nothing can need them.
   */
  #pruneParkedWritten(): void {
    const replaying = new Set<string>();
    for (let i = this.#walkHead; i < this.#walks.length; i++) {
      const r = this.#walks[i];
      if (r !== null && r !== undefined) replaying.add(r.id);
    }
    for (const id of [...this.#parkedWritten.keys()]) {
      if (this.#replayAfterBirth.has(id) || this.#outage?.has(id) === true) continue;
      if (!replaying.has(id)) this.#forgetParkedWritten(id);
    }
  }

  /** Forgets the polls written live kept for `id` (#parkedWritten). */
  #forgetParkedWritten(id: string): void {
    const kept = this.#parkedWritten.get(id);
    if (kept === undefined) return;
    this.#parkedWrittenCount -= kept.size;
    this.#parkedWritten.delete(id);
    if (this.#parkedWritten.size === 0) this.#parkedFullWarned = false;
  }

  /**
   * The births of a new connection are out: devices that left with data not replayed (their
   * replay under way, or a DDATA handed over before their DDEATH failed) and were not born again
   * lose it (counted, WARNed).
   */
  #dropReplaysNotBorn(): void {
    if (this.#replayAfterBirth.size === 0) return;
    const ids = [...this.#replayAfterBirth.keys()];
    this.counts.storeDropped += ids.length;
    this.#replayAfterBirth.clear();
    for (const id of ids) this.#forgetParkedWritten(id);
    this.#log.warn(
      `sparkplug store-and-forward: ${ids.length} device(s) that left with data not replayed were ` +
        `not born again (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", ..." : ""}): the ` +
        `rest of their replay is dropped`,
    );
  }

  /**
   * Forgets the aliases of devices not born on this connection (`only`: of that device alone),
   * except those whose DDATA wait in the store-and-forward queue (drained under the aliases they
   * were kept with, once the device is born again). So the alias maps hold the node's metrics,
   * the born devices' and the queued ones', never every device id the process saw: devices that
   * come and go (a reload, a provider whose device ids change) do not grow them. A device that
   * returns is born with new aliases (a host takes each alias from the DBIRTH). A DDEATH's prune
   * (`only`) costs that device's aliases alone: they are indexed by device, the queue counted per
   * device (#storedOf).
   */
  #pruneAliases(only?: string): void {
    if (only !== undefined) {
      if (!this.#devices.has(only) && !this.#storedOf.has(only)) this.#forgetAliases(only);
      return;
    }
    for (const device of this.#aliases.keys()) {
      if (device === NODE || this.#devices.has(device) || this.#storedOf.has(device)) continue;
      this.#forgetAliases(device);
    }
  }

  /** Forgets every alias of a device (its own only: indexed by device). */
  #forgetAliases(device: string): void {
    const names = this.#aliases.get(device);
    if (names === undefined) return;
    for (const alias of names.values()) this.#aliasNames.delete(alias);
    this.#aliasCount -= names.size;
    this.#aliases.delete(device);
  }

  /** Counts a DDATA into (+1) or out of (-1) the store for its device. */
  #storedCount(deviceId: string, delta: 1 | -1): void {
    const n = (this.#storedOf.get(deviceId) ?? 0) + delta;
    if (n > 0) this.#storedOf.set(deviceId, n);
    else this.#storedOf.delete(deviceId);
  }

  /**
   * A provider's devices after a rediscovery, a reload or a change of availability: DDEATH for
   * those gone, DBIRTH for those new or changed. Under MAX_IN_FLIGHT like data: with the writes
   * full the provider waits in #providersBehind (compared again as writes complete).
   */
  #providerChanged(providerId: string): void {
    if (!this.online) return;
    const full = () => {
      if (this.#inFlight < MAX_IN_FLIGHT) return false;
      this.#providersBehind.add(providerId);
      return true;
    };
    if (full()) return;
    const p = this.#o.inventory.provider(providerId);
    const now = new Map<string, DeviceCapabilities>();
    if (p?.available) {
      for (const caps of p.devices) {
        now.set(sparkplugDeviceId(caps.device.providerId, caps.device.deviceId), caps);
      }
    }
    for (const [id, d] of [...this.#devices]) {
      if (d.providerId !== providerId || now.has(id)) continue;
      if (full()) return;
      if (!this.#deviceDeath(id)) return;
    }
    // A spell ends with its device leaving the configuration (its provider removed, or up
    // without it), not with its provider down -- a reload restarting it included: back with the
    // same capabilities, it is not measured nor WARNed again (a provider that flaps is not a WARN
    // each time it is back).
    if (!this.#providerDown(providerId)) {
      for (const [id, t] of [...this.#tooLarge]) {
        if (t.providerId === providerId && !now.has(id)) this.#tooLarge.delete(id);
      }
    }
    for (const [id, caps] of now) {
      // Born again when anything its DBIRTH declares changed (a signal retyped, a function
      // added): a host reads each alias as its birth declared it. One held back for its size is
      // measured again when its capabilities changed, else at the next births.
      const description = birthDescription(caps);
      if (this.#devices.get(id)?.description === description) continue;
      if (this.#tooLarge.get(id)?.description === description) continue;
      if (full()) return;
      if (!this.#deviceBirth(caps)) return;
    }
    this.#answersBorn(providerId);
  }

  /**
   * Holds the answer to a DCMD to one of a provider's devices not born yet until that provider's
   * births went out (#answersAfterBirth), and has its devices compared (their births due).
   */
  #answerAfterBirth(providerId: string, name: string, text: string): void {
    if (!this.online) return;
    if (this.#answersAfterBirthCount >= MAX_ANSWERS_WAITING) {
      this.counts.publishFailures++;
      return;
    }
    let held = this.#answersAfterBirth.get(providerId);
    if (held === undefined) this.#answersAfterBirth.set(providerId, held = []);
    held.push({ name, text });
    this.#answersAfterBirthCount++;
    this.#providerChangedSoon(providerId);
  }

  /** A provider's births went out: the answers that waited for them follow (by the node). */
  #answersBorn(providerId: string): void {
    const held = this.#answersAfterBirth.get(providerId);
    if (held === undefined) return;
    this.#answersAfterBirth.delete(providerId);
    this.#answersAfterBirthCount -= held.length;
    for (const a of held) this.#commandResult(NODE, a.name, a.text);
  }

  /** The connection that the held answers were for is gone (the host saw its NDEATH). */
  #dropAnswersAfterBirth(): void {
    this.#answersAfterBirth.clear();
    this.#answersAfterBirthCount = 0;
  }

  /** The providers whose births and deaths waited for the writes in flight, while they fit. */
  #providersCatchUp(): void {
    for (const id of [...this.#providersBehind]) {
      if (this.#inFlight >= MAX_IN_FLIGHT) return;
      this.#providersBehind.delete(id);
      this.#providerChanged(id);
    }
  }

  // ---- data by exception ----

  #onEvent(e: PublishedEvent): void {
    const ev = e.event;
    switch (ev.kind) {
      case "state_update":
        this.#queueSignal(
          ev.provider_id,
          ev.device_id,
          ev.signal_id,
          ev.value,
          ev.quality,
          ev.timestamp_ms,
        );
        return;
      case "quality_change": {
        const s = this.#o.reads.signal(ev.provider_id, ev.device_id, ev.signal_id);
        this.#queueSignal(
          ev.provider_id,
          ev.device_id,
          ev.signal_id,
          s?.value ?? null,
          ev.new_quality,
          ev.timestamp_ms,
        );
        return;
      }
      case "device_availability":
      case "provider_health_change":
        this.#providerChangedSoon(ev.provider_id);
        this.#nodeSoon();
        return;
      case "mode_change":
      case "estop_change":
      case "alarm":
      // A reload changes node metrics without a transition of its own: an alarm it removed or
      // replaced (a changed one starts from normal) leaves the counts without an `alarm` event.
      case "config_reload":
        this.#nodeSoon();
        return;
      default:
        return;
    }
  }

  #queueSignal(
    providerId: string,
    deviceId: string,
    signalId: string,
    value: TypedValue | null,
    quality: Quality,
    polledAtMs: number,
  ): void {
    const id = sparkplugDeviceId(providerId, deviceId);
    const dev = this.#devices.get(id);
    const replay = this.#o.replay;
    if (dev === undefined || !dev.signals.has(signalId)) {
      // A device (or a signal) first seen while the node is offline after its first births (a
      // provider restarted during a broker outage): not born on the connection gone, but the
      // ring holds its changes like any device's, replayed after the DBIRTH of the next births.
      if (
        replay === undefined || this.online || this.#lastNode === null ||
        this.#outage?.has(id) || this.#tooLarge.has(id) ||
        !this.#o.inventory.capabilities(providerId, deviceId)?.signals.some((s) =>
          s.signalId === signalId
        )
      ) return;
      const seq = replay.position(providerId, deviceId);
      this.#noteOutage(id, { atMs: this.#polledNow(polledAtMs), seq });
      return;
    }
    // The cache publishes a poll's changes before the ring records the poll: the ring's next
    // sequence number is this poll's.
    const seq = replay?.position(providerId, deviceId) ?? 0;
    if (replay !== undefined && (this.#outage !== null || !this.online)) {
      // The history ring has it: only when the device's data stopped going out is noted.
      this.#noteOutage(id, { atMs: this.#polledNow(polledAtMs), seq });
      return;
    }
    let m = this.#pending.get(id);
    if (m === undefined) this.#pending.set(id, m = new Map());
    m.set(signalId, { value, quality, timestampMs: this.#polledNow(polledAtMs), seq });
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // One DDATA per device per poll pass: the pass publishes its updates synchronously.
      queueMicrotask(this.#flushContained);
    }
  }

  /**
   * A change's time (the node's clock read as the poll pass publishes it), or, when that read
   * fails, `polledAtMs`: the state cache's own wall-clock read of the poll (the event's
   * timestamp_ms), a real reading of the same moment -- the change is not lost with the event.
   */
  #polledNow(polledAtMs: number): number {
    return this.#wallNow("data (DDATA)") ?? polledAtMs;
  }

  /**
   * The data path's contained entries, made once (a closure per poll pass or per completed write
   * would be garbage on the poll path).
   */
  readonly #flushContained = (): void => this.#contain("data", this.#flushNow);
  readonly #flushNow = (): void => this.#flush();
  readonly #afterWrite = (): void => {
    // A Rebirth asked for meanwhile (its births carry the node metrics), a node metric change
    // (the e-stop latch, the mode) and the answers to commands before any data waiting.
    if (this.#rebirthBehind) this.rebirth();
    // A Rebirth folded behind the births going out, once their writes have settled.
    if (this.#rebirthFolded) this.#foldedRebirth();
    // The node's history (kept while away) before its present: a live NDATA after the last
    // historical one.
    if (this.#nodeKept.length > 0) this.#drainNode();
    if (this.#nodeBehind) this.#publishNode();
    if (this.#answersWaiting.size > 0) this.#sendAnswers();
    // Births before the data of their devices.
    if (this.#providersBehind.size > 0) this.#providersCatchUp();
    if (this.#storeLength() > 0) this.#drain();
    else if (this.#outage !== null || this.#walkHead < this.#walks.length) this.#pump();
  };

  #flush(): void {
    this.#flushQueued = false;
    // The DDATA's time, read once per flush when one goes out live; null: the read failed, and
    // what would have gone out live waits as store and forward's (dated by its polls).
    let now: number | null | undefined;
    for (const [id, signals] of this.#pending) {
      let live = this.online && this.#storeLength() === 0 && this.#outage === null &&
        this.#inFlight < MAX_IN_FLIGHT;
      if (live && now === undefined) now = this.#wallNow("data (DDATA)");
      if (now === null) live = false;
      if (!live && this.#o.replay !== undefined) {
        this.#noteOutageOf(id, signals);
        continue;
      }
      const metrics: Metric[] = [];
      const types = this.#devices.get(id)?.types;
      const queued = this.#o.replay === undefined;
      for (const [signalId, p] of signals) {
        const m: Metric = {
          alias: this.#alias(id, signalId),
          timestamp: p.timestampMs,
          properties: propertySet({ Quality: QUALITY_CODE[p.quality] }),
          ...signalValueFields(p.value, types?.get(signalId) ?? null),
        };
        if (queued) this.#polledTypes.set(m, p.value?.type ?? null);
        metrics.push(m);
      }
      // In order: while anything is stored, new data queues behind it.
      if (live) {
        // The poll its changes belong to, for the ring's replay should the write fail (#lost).
        let seq = Infinity;
        for (const p of signals.values()) seq = Math.min(seq, p.seq);
        const payload = { timestamp: now!, metrics };
        if (this.#send("DDATA", id, payload, false, seq, this.#monoNow("data (DDATA)"))) continue;
        // Split over max_message_bytes without room for all its parts (#sendSplit): none went
        // out, so it waits as data that cannot go out live does.
        if (this.#o.replay !== undefined) this.#noteOutageOf(id, signals);
        else this.#keep(id, metrics);
      } else {
        // Its polls' time when it went out late for want of a clock read (#keep reads again).
        this.#keep(id, metrics, now === null ? earliestOf(signals) : undefined);
      }
    }
    this.#pending.clear();
    this.#drain();
    this.#pump();
  }

  /** A device's changes that cannot go out live: the ring replays them from their first poll. */
  #noteOutageOf(id: string, signals: ReadonlyMap<string, PendingSignal>): void {
    let atMs = Infinity;
    let seq = Infinity;
    for (const p of signals.values()) {
      atMs = Math.min(atMs, p.timestampMs);
      seq = Math.min(seq, p.seq);
    }
    this.#noteOutage(id, { atMs, seq });
  }

  // ---- store and forward ----

  #storeLength(): number {
    return this.#store.length - this.#storeHead;
  }

  /**
   * Keeps a DDATA for later, dropping the oldest beyond the bounds (counted, WARNed). A write that
   * failed comes back with its time `atMs` and its place `atMono` (the monotonic time it was
   * polled): kept in that place, not by its wall time (a step back of the wall clock since).
   */
  #keep(deviceId: string, metrics: Metric[], atMs?: number, atMono?: number): void {
    const { maxMessages, maxBytes } = this.#o.config.storeForward;
    // A clock that fails now: the time of its earliest change (each metric carries its poll's).
    const timestampMs = atMs ?? this.#wallNow("data kept for later (DDATA)") ??
      Math.min(...metrics.map((m) => Number(m.timestamp)));
    const mono = atMono ?? this.#monoNow("data kept for later (DDATA)");
    for (const m of metrics) m.is_historical = true;
    const bytes = encode({ timestamp: timestampMs, metrics }).length;
    this.counts.stored++;
    const units = this.#declaredUnits.get(deviceId);
    const item = { deviceId, timestampMs, atMono: mono, metrics, bytes, units };
    if (atMono === undefined) this.#store.push(item);
    else {
      // In poll order, after those of the same time (failed writes come back oldest first).
      let lo = this.#storeHead;
      let hi = this.#store.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#store[mid]!.atMono <= mono) lo = mid + 1;
        else hi = mid;
      }
      this.#store.splice(lo, 0, item);
    }
    this.#storedCount(deviceId, 1);
    this.#storeBytes += bytes;
    let dropped = 0;
    while (
      this.#storeLength() > 0 &&
      (this.#storeLength() > maxMessages || this.#storeBytes > maxBytes)
    ) {
      const oldest = this.#store[this.#storeHead]!;
      this.#storeBytes -= oldest.bytes;
      this.#storedCount(oldest.deviceId, -1);
      this.#storeHead++;
      dropped++;
    }
    if (this.#storeHead > 1024 && this.#storeHead * 2 > this.#store.length) {
      this.#store.splice(0, this.#storeHead);
      this.#storeHead = 0;
    }
    if (dropped > 0) {
      this.counts.storeDropped += dropped;
      if (!this.#dropWarned) {
        this.#dropWarned = true;
        this.#log.warn(
          `sparkplug store-and-forward full (sparkplug.store_forward: ${maxMessages} messages, ` +
            `${maxBytes} bytes): dropping the oldest data (${this.counts.storeDropped} dropped so far)`,
        );
      }
    }
  }

  /** Publishes stored data, oldest first, with is_historical, while online and under the bound. */
  #drain(): void {
    const had = this.#storeLength() > 0;
    while (this.online && this.#storeLength() > 0 && this.#inFlight < MAX_IN_FLIGHT) {
      const item = this.#store[this.#storeHead]!;
      this.#storeHead++;
      this.#storeBytes -= item.bytes;
      this.#storedCount(item.deviceId, -1);
      // A device that did not come back on this connection has no alias there: its data goes.
      const dev = this.#devices.get(item.deviceId);
      if (dev === undefined) {
        this.counts.storeDropped++;
        continue;
      }
      // Values of a signal's old type or unit (its provider came back declaring another): the
      // birth on this connection declares the new one, and a host reads the alias's data as
      // that. A signal the birth no longer declares (it came back without it): its alias is no
      // metric of that birth, so a host could not read it at all.
      let otherUnit = 0;
      const metrics = item.metrics.filter((m) => {
        const as = this.#asBorn(dev, item.deviceId, m, item.units);
        if (as === "unit") otherUnit++;
        return as === "born";
      });
      if (metrics.length < item.metrics.length) {
        this.counts.storeDropped++;
        if (otherUnit > 0 && !this.#misunitWarned) {
          this.#misunitWarned = true;
          this.#log.warn(
            `sparkplug store-and-forward: stored data of ${
              quoteName(item.deviceId)
            } polled in another unit ` +
              `than its signals' birth declares now (the provider came back with other units), ` +
              `is left out`,
          );
        }
        if (metrics.length + otherUnit < item.metrics.length && !this.#mistypedWarned) {
          this.#mistypedWarned = true;
          this.#log.warn(
            `sparkplug store-and-forward: stored data of ${
              quoteName(item.deviceId)
            } polled as another type ` +
              `than its signals' birth declares now, or of a signal it no longer declares (the ` +
              `provider came back with other types or signals), is left out`,
          );
        }
        if (metrics.length === 0) continue;
      }
      this.counts.replayed++;
      // A write that fails with the connection is kept again, in its place (#lost).
      this.#send(
        "DDATA",
        item.deviceId,
        { timestamp: item.timestampMs, metrics },
        true,
        0,
        item.atMono,
      );
    }
    if (this.#storeLength() === 0) {
      this.#store.length = 0;
      this.#storeHead = 0;
      this.#mistypedWarned = false;
      this.#misunitWarned = false;
      // Queued data of devices not born again was dropped: their aliases go too.
      if (had) this.#pruneAliases();
      // The stretch of drops ends once data can go out live again. Not before: a store that
      // keeps nothing (max_messages 0, a max_bytes below one DDATA) is empty after every drop,
      // offline or with the writes full, and would WARN and end a stretch per DDATA.
      if (this.#dropWarned && this.online && this.#inFlight < MAX_IN_FLIGHT) {
        this.#dropWarned = false;
        this.#log.info(
          `sparkplug store-and-forward drained (${this.counts.storeDropped} dropped since start)`,
        );
      }
    }
  }

  /**
   * Whether a stored metric is of a signal the device's current birth declares, its value of the
   * type that birth declares ("born"), polled in another unit than it declares ("unit": `units`
   * are its device's when it was kept), or neither ("other").
   */
  #asBorn(
    dev: BornDevice,
    deviceId: string,
    m: Metric,
    units: ReadonlyMap<string, string> | undefined,
  ): "born" | "unit" | "other" {
    const named = this.#aliasNames.get(Number(m.alias));
    const signalId = named?.deviceId === deviceId ? named.name : undefined;
    if (signalId === undefined || !dev.signals.has(signalId)) return "other";
    const born = dev.types.get(signalId) ?? null;
    // Polled as another type than the birth declares now: left out, as the ring's replay does.
    const polled = this.#polledTypes.get(m) ?? null;
    if (polled !== null && born !== null && polled !== born) return "other";
    if (m.is_null === true) return "born";
    // A typeless signal's values travel as text (signalValueFields).
    const field = born === null ? "string_value" : VALUE_FIELD_OF[born];
    if (m[field] === undefined) return "other";
    // Polled in another unit than the birth declares now: left out, as the ring's replay does.
    if (units === undefined) return "born";
    return (units.get(signalId) ?? "") === (dev.units.get(signalId) ?? "") ? "born" : "unit";
  }

  // ---- store and forward from the history ring ----

  /** Notes when a device's data stopped going out (its first change since; nothing is kept). */
  #noteOutage(id: string, start: OutageStart): void {
    if (this.#outage === null) {
      this.#outage = new Map();
      this.#log.info(
        `sparkplug: data not published from ${start.atMs} ms on is left in the history ring, replayed ` +
          `after the next births (it reaches back history.memory_seconds: ` +
          `${this.#o.replay!.memorySeconds} s)`,
      );
    }
    // The earliest start wins: a failed write reports its poll after later changes were noted.
    const noted = this.#outage.get(id);
    if (noted === undefined || start.seq < noted.seq) this.#outage.set(id, start);
  }

  /**
   * Ends the outage: a walk per device over the ring's changes since its outage start up to now
   * (these births, or the moment writes drained), queued for #pump. What the ring no longer
   * reaches is counted and WARNed once.
   */
  #startReplay(): void {
    const replay = this.#o.replay!;
    const outage = this.#outage!;
    this.#outage = null;
    // For the lines alone: the walks end at the ring's position now, whatever the wall clock.
    const until = this.#wallNow("the end of a replay") ?? Infinity;
    let gaps = 0;
    let gapFrom = Infinity;
    let gapTo = -Infinity;
    let over = 0;
    let walks = 0;
    for (const [id, start] of outage) {
      const dev = this.#devices.get(id);
      // A device not born again: its aliases are not valid on this connection.
      if (dev === undefined) {
        this.counts.storeDropped++;
        continue;
      }
      if (this.#walks.length - this.#walkHead >= MAX_REPLAY_WALKS) {
        this.counts.storeDropped++;
        over++;
        continue;
      }
      // Up to the polls recorded by now, in poll order (a wall clock stepped back meanwhile
      // misplaces none).
      const untilSeq = replay.position(dev.providerId, dev.deviceId);
      const walk = replay.open(dev.providerId, dev.deviceId, dev.signals, start.seq, untilSeq);
      if (walk === null || walk.reachFromSeq > start.seq) {
        this.counts.storeDropped++;
        gaps++;
        gapFrom = Math.min(gapFrom, start.atMs);
        const end = Math.min(walk === null ? until : walk.reachFromMs, until);
        gapTo = Math.max(gapTo, Number.isFinite(end) ? end : start.atMs);
      }
      if (walk !== null) {
        this.#walks.push({ id, walk, mistyped: 0, misunit: 0, next: start });
        walks++;
      }
    }
    if (this.#walkHead > 1024 && this.#walkHead * 2 > this.#walks.length) {
      this.#walks.splice(0, this.#walkHead);
      this.#walkHead = 0;
    }
    if (gaps > 0) {
      this.#log.warn(
        `sparkplug store-and-forward: the history ring no longer reaches back to the outage ` +
          `start: ${gaps} device(s) lose their data from ${gapFrom} ms to ${gapTo} ms ` +
          `(${Math.round((gapTo - gapFrom) / 1000)} s; bound history.memory_seconds: ` +
          `${replay.memorySeconds} s, history.memory_max_bytes: ${replay.memoryMaxBytes}); ` +
          `${this.counts.storeDropped} dropped so far`,
      );
    }
    if (over > 0) {
      this.#log.warn(
        `sparkplug store-and-forward: ${over} device(s) not replayed: ${MAX_REPLAY_WALKS} ` +
          `replays already waiting (MAX_REPLAY_WALKS)`,
      );
    }
    if (walks > 0) {
      this.#log.info(
        `sparkplug: replaying the changes of ${walks} device(s) up to ${
          Number.isFinite(until) ? `${until} ms` : "now"
        } from the ` +
          `history ring, with is_historical`,
      );
    }
  }

  /**
   * The connection went away with replays in progress: each device's outage starts again where
   * its replay stands (the first poll not handed over); a poll handed over whose write then
   * fails moves it back to that poll (#lost). The births after replay them again.
   */
  #replayBack(): void {
    if (this.#o.replay === undefined) return;
    for (let i = this.#walkHead; i < this.#walks.length; i++) {
      const r = this.#walks[i];
      if (r !== null && r !== undefined && this.#devices.has(r.id)) this.#noteOutage(r.id, r.next);
    }
    this.#walks = [];
    this.#walkHead = 0;
  }

  /**
   * Publishes the ring's changes, one DDATA per device and poll (its time on the message and
   * every metric), oldest first, while online and under MAX_IN_FLIGHT; continued as writes
   * complete. An outage noted while online (writes stalled) ends here once they drain.
   */
  #pump(): void {
    if (this.#o.replay === undefined) return;
    while (this.online && this.#inFlight < MAX_IN_FLIGHT) {
      if (this.#walkHead === this.#walks.length) {
        if (this.#walks.length > 0) {
          this.#walks = [];
          this.#walkHead = 0;
        }
        // Not while a poll pass's changes wait for #flush: they would go out twice. Nor while
        // live DDATA are in flight: each settles (written: skipped by the replay; failed: its
        // poll noted) before the walks start, so none goes out live and again as historical.
        if (this.#outage === null || this.#flushQueued || this.#liveInFlight > 0) return;
        this.#startReplay();
        if (this.#walks.length === 0) return;
      }
      const r = this.#walks[this.#walkHead];
      if (r === null || r === undefined) {
        // Its device left meanwhile: its replay waits for the next DBIRTH (#parkReplay).
        this.#walkHead++;
        continue;
      }
      const dev = this.#devices.get(r.id);
      if (dev === undefined) {
        // Gone since (a DDEATH, or not born again on a new connection).
        this.counts.storeDropped++;
        this.#walks[this.#walkHead++] = null;
        continue;
      }
      const metrics: Metric[] = [];
      const t = r.walk.next((signalId, value, quality, timeMs, unit) => {
        if (!dev.signals.has(signalId)) return;
        // A sample polled before the provider came back declaring the signal as another type:
        // the birth on this connection declares the new type, and a host reads the alias's data
        // as that type, so it is left out (counted) rather than sent mislabelled.
        const born = dev.types.get(signalId) ?? null;
        if (value !== null && born !== null && value.type !== born) {
          r.mistyped++;
          return;
        }
        // So is one polled in another unit than the birth declares now (or one the ring no
        // longer knows the unit of): under a birth in K, a host would read 20 degC as 20 K.
        if (value !== null && unit !== (dev.units.get(signalId) ?? "")) {
          r.misunit++;
          return;
        }
        metrics.push({
          alias: this.#alias(r.id, signalId),
          timestamp: timeMs,
          is_historical: true,
          properties: propertySet({ Quality: QUALITY_CODE[quality] }),
          ...signalValueFields(value, born),
        });
      });
      if (t === null) {
        this.#walks[this.#walkHead++] = null;
        this.#leftOut(r.mistyped, r.id, "as another type", "types");
        this.#leftOut(r.misunit, r.id, "in another unit", "units");
        if (r.walk.overtaken) {
          this.counts.storeDropped++;
          this.#log.warn(
            `sparkplug store-and-forward: the replay of ${r.id} was overtaken by the history ` +
              `ring (history.memory_seconds: ${this.#o.replay.memorySeconds} s): some of its ` +
              `changes were dropped before they were published`,
          );
        }
        continue;
      }
      // Its live DDATA went out while an earlier one of the device was in flight (that one
      // failed: the replay starts at its poll); the host has it.
      const seq = r.walk.seq;
      r.next = { atMs: t, seq: seq + 1 };
      if (metrics.length === 0 || this.#wentOutLive(r.id, seq)) continue;
      this.counts.replayed++;
      // With its poll: a write that fails with the connection starts the outage there again
      // (#lost); one written is remembered as out (#liveWritten).
      this.#send("DDATA", r.id, { timestamp: t, metrics }, true, seq);
    }
  }

  /**
   * A device's replay ended having left out `n` samples polled `how` (as another type, in another
   * unit) than its signals' birth declares now: counted once (storeDropped) and said (one WARN).
   */
  #leftOut(n: number, deviceId: string, how: string, what: string): void {
    if (n === 0) return;
    this.counts.storeDropped++;
    this.#log.warn(
      `sparkplug store-and-forward: ${n} sample(s) of ${deviceId} were polled ${how} than its ` +
        `signals' birth declares now (the provider came back with other ${what}) and were not ` +
        "replayed",
    );
  }

  /**
   * Without the history ring: notes the units a provider's devices declare now (#declaredUnits);
   * those of its devices gone are forgotten.
   */
  #noteUnits(providerId: string): void {
    if (this.#o.replay !== undefined) return;
    const listed = new Set<string>();
    for (const caps of this.#o.inventory.provider(providerId)?.devices ?? []) {
      const id = sparkplugDeviceId(caps.device.providerId, caps.device.deviceId);
      listed.add(id);
      const known = this.#declaredUnits.get(id);
      if (
        known !== undefined && known.size === caps.signals.length &&
        caps.signals.every((s) => known.get(s.signalId) === s.unit)
      ) continue;
      this.#declaredUnits.set(id, new Map(caps.signals.map((s) => [s.signalId, s.unit])));
    }
    for (const id of [...this.#declaredUnits.keys()]) {
      if (!listed.has(id) && sparkplugDeviceProvider(id) === providerId) {
        this.#declaredUnits.delete(id);
      }
    }
  }

  #providerChangedSoon(providerId: string): void {
    queueMicrotask(() =>
      this.#contain(`births of ${providerId}`, () => this.#providerChanged(providerId))
    );
  }

  #nodeSoon(): void {
    if (this.#nodeQueued) return;
    this.#nodeQueued = true;
    queueMicrotask(() =>
      this.#contain("node data", () => {
        this.#nodeQueued = false;
        this.#publishNode();
      })
    );
  }

  /**
   * The wall clock's time to stamp `what` (a message of the node: a node metric change, the
   * births, a DBIRTH, a DDEATH, a DDATA, the answer to a command), or null: the read failed (a
   * clock that throws). The one guard of the node's wall-clock reads: WARNed once per failing
   * spell (not an internal error), and what waits is tried again in NODE_CLOCK_RETRY_MS (one
   * timer at a time: #clockRetried) or at the next completed write -- never an invented time,
   * and the caller leaves what it could not date where it waits for the writes (#nodeBehind,
   * #providersBehind, #answersWaiting, #birthsUndated), never dropped.
   */
  #wallNow(what: string): number | null {
    try {
      const now = this.#o.clock.nowMs();
      this.#clockFails.ok();
      return now;
    } catch (err) {
      this.#clockFails.fail(
        `sparkplug: the wall clock failed dating ${what} (${errorMessage(err)})`,
      );
      if (this.#clockRetry === null && !this.#stopped) {
        this.#clockRetry = this.#o.clock.setTimer(this.#clockRetried, NODE_CLOCK_RETRY_MS);
      }
      return null;
    }
  }

  /**
   * The monotonic clock's time for `what` (the place in order of a message, an age), or null: the
   * read threw, was not a finite number (NaN) or was behind one already read (a step back). The one
   * guard of the node's monotonic reads: WARNed once per failing spell (not an internal error). A
   * read that throws in the middle of the births, a kept latch change or a connection's close
   * would leave them half done (the births not published with the data waiting for them cleared,
   * the change lost, the node never reconnecting); a NaN or a step back would put what is stored
   * and forwarded out of order (#keep, #keepNodeAt sort by it) or count a connection that held as
   * closed at its births (#afterBirthLoss).
   */
  #monoRead(what: string): number | null {
    let t: number;
    try {
      t = this.#o.clock.monoMs();
    } catch (err) {
      this.#monoFails.fail(
        `sparkplug: the monotonic clock failed reading ${what} (${errorMessage(err)})`,
      );
      return null;
    }
    if (!Number.isFinite(t) || t < this.#lastMono) {
      this.#monoFails.fail(
        `sparkplug: the monotonic clock failed reading ${what} (read ${t}` +
          (Number.isFinite(t) ? `, behind ${this.#lastMono} read before)` : ")"),
      );
      return null;
    }
    this.#lastMono = t;
    this.#monoFails.ok();
    return t;
  }

  /**
   * #monoRead, or when it fails the latest reading that worked: a place in order after all that
   * was read before it (in the order of the calls for equal ones), so nothing waits or is lost for
   * it, and nothing stored is put before older data.
   */
  #monoNow(what: string): number {
    return this.#monoRead(what) ?? this.#lastMono;
  }

  /**
   * NODE_CLOCK_RETRY_MS after a wall-clock read failed (#wallNow): what waited for it is tried
   * again -- the births of this connection, e-stop answers kept for the host's history, then
   * what waits for the writes (#afterWrite: a Rebirth, node metrics behind, answers, providers'
   * births and deaths), or, away, the node metrics for its history (#nodeSoon). Each reads the
   * clock again: still failing, it waits again.
   */
  readonly #clockRetried = (): void => {
    this.#clockRetry = null;
    this.#contain("what waited for the wall clock", () => {
      if (this.#birthsUndated) {
        this.#birthsUndated = false;
        this.#maybeBirth();
      }
      this.#datedEstopAnswers();
      // Online, a node change not dated waits as #nodeBehind; away, #keepNode reads again.
      if (this.online) this.#afterWrite();
      else this.#nodeSoon();
    });
  };

  /**
   * The NCMD e-stop answers kept while the clock failed, dated `at` (a read that worked) or now,
   * and kept (#keepEstopAnswer) in the order they were given.
   */
  #datedEstopAnswers(at?: number): void {
    if (this.#estopAnswersUndated.length === 0) return;
    const now = at ?? this.#wallNow("an NCMD e-stop's answer kept for the host's history");
    if (now === null) return;
    for (const a of this.#estopAnswersUndated.splice(0)) {
      this.#keepEstopAnswer(now, a.atMono, a.value);
    }
  }

  /**
   * NDATA of the node metrics that differ from what the host last got. One that cannot be handed
   * over now (writes full) is not lost: #nodeBehind, and the next completed write sends the
   * metrics as they are then (a mode or latch change must reach the host, not only the next one).
   * Nor does one go out while changes kept from an outage still wait (#nodeKept): history first,
   * then the present, on the wire as in the host's history.
   */
  #publishNode(): void {
    this.#nodeBehind = false;
    if (!this.online) {
      this.#keepNode();
      // Births held back for the NBIRTH's size (#nbirthTooLarge): its size depends on the node
      // metrics' values alone on a connection (a mode named IDLE rather than MANUAL, smaller
      // counts), and this is where every change of them arrives: measured again, born if it fits.
      if (this.#nbirthOverBytes !== null) this.#maybeBirth();
      return;
    }
    const now = this.#wallNow("a node metric change");
    if (now === null) {
      // Not dated, not lost: the next completed write or the retry timer sends it.
      this.#nodeBehind = true;
      return;
    }
    const status = this.#nodeState();
    // The first change left behind, overtaken since: history first, then the present.
    if (this.#keepOvertaken(status) && this.#inFlight < MAX_IN_FLIGHT) this.#drainNode();
    const metrics = this.#nodeMetrics(status, this.#lastNode, now, false);
    if (metrics.length === 0) {
      // Back as the host last got them: nothing is behind (changes meanwhile are coalesced).
      this.#nodeBehindSince = null;
      return;
    }
    const payload: Payload = { timestamp: now, metrics };
    const atMono = this.#monoNow("a node metric change");
    if (this.#nodeKept.length === 0 && this.#send("NDATA", undefined, payload, false, 0, atMono)) {
      this.#lastNode = status;
      this.#nodeBehindSince = null;
    } else {
      this.#nodeBehind = true;
      this.#nodeBehindSince ??= { atMs: now, atMono, status };
    }
  }

  /**
   * The connection went away with a node metric change left behind (#nodeBehind): it is history
   * now, kept like a change while not online -- the metrics as they were at the first change
   * left behind, at its time, then what changed since, now -- so a latch that engaged while the
   * writes were full reaches the host's history even when it is released before the node is
   * back.
   */
  #keepBehind(): void {
    const behind = this.#nodeBehindSince;
    this.#nodeBehindSince = null;
    this.#nodeBehind = false;
    if (behind === null || this.#lastNode === null) return;
    const metrics = this.#nodeMetrics(behind.status, this.#lastNode, behind.atMs, false);
    if (metrics.length > 0) {
      this.#lastNode = behind.status;
      this.#keepNodeAt(behind.atMs, behind.atMono, metrics);
    }
    this.#keepNode();
  }

  /**
   * The first change left behind at MAX_IN_FLIGHT (#nodeBehindSince), when the metrics moved on
   * from it before a write completed (an e-stop latched and released while the broker stalled):
   * kept at its time as history (#nodeKept, is_historical), as #keepBehind keeps it when the
   * connection goes away, so the present that follows does not hide it from the host. Whether it
   * was kept; one not overtaken goes out live as it is.
   */
  #keepOvertaken(status: NodeState): boolean {
    const behind = this.#nodeBehindSince;
    if (behind === null || this.#lastNode === null) return false;
    if (this.#nodeMetrics(status, behind.status, behind.atMs, false).length === 0) return false;
    this.#nodeBehindSince = null;
    const metrics = this.#nodeMetrics(behind.status, this.#lastNode, behind.atMs, false);
    if (metrics.length === 0) return false;
    this.#lastNode = behind.status;
    this.#keepNodeAt(behind.atMs, behind.atMono, metrics);
    return true;
  }

  /**
   * While the node is not online: the node metrics that changed, kept at their time, so that a
   * latch and its clearing (a mode through FAULT) while the host was away reach its history after
   * the next births (which carry the metrics as they are then). Before the first births too,
   * compared with the metrics at watch() (#unbornNode): a stop latched and cleared before any
   * host saw the node is still a stop the host must learn of.
   */
  #keepNode(): void {
    const before = this.#lastNode ?? this.#unbornNode;
    if (before === null) return;
    const now = this.#wallNow("a node metric change");
    if (now === null) return; // kept when the retry timer finds the clock working
    const status = this.#nodeState();
    const metrics = this.#nodeMetrics(status, before, now, false);
    if (metrics.length === 0) return;
    if (this.#lastNode === null) this.#unbornNode = status;
    else this.#lastNode = status;
    for (const m of metrics) m.is_historical = true;
    const atMono = this.#monoNow("a node metric change");
    this.#nodeKept.push({ timestampMs: now, atMono, metrics });
    if (this.#nodeKept.length > MAX_NODE_CHANGES_KEPT) this.#nodeKeptOver();
  }

  /**
   * #nodeKept beyond MAX_NODE_CHANGES_KEPT: the oldest goes (counted, WARNed once per outage), but
   * not one of the e-stop's -- a change of the latch or an NCMD e-stop's answer -- while another
   * is there to go: a long outage's alarm or mode changes do not push the stop out of the host's
   * history.
   */
  #nodeKeptOver(): void {
    const latch = this.#alias(NODE, NODE_METRICS.latched);
    const answer = this.#alias(NODE, NODE_METRICS.commandResult);
    const estopPrefix = `${NODE_METRICS.estop}: `;
    const ofEstop = (k: { readonly metrics: Metric[] }) =>
      k.metrics.some((m) =>
        m.alias === latch ||
        (m.alias === answer && typeof m.string_value === "string" &&
          m.string_value.startsWith(estopPrefix))
      );
    const i = this.#nodeKept.findIndex((k) => !ofEstop(k));
    this.#nodeKept.splice(i === -1 ? 0 : i, 1);
    this.counts.storeDropped++;
    if (!this.#nodeKeptWarned) {
      this.#nodeKeptWarned = true;
      this.#log.warn(
        `sparkplug: more than ${MAX_NODE_CHANGES_KEPT} node metric changes while not online ` +
          `(MAX_NODE_CHANGES_KEPT): the oldest are dropped from the replay (the e-stop's last)`,
      );
    }
  }

  /**
   * The kept node metric changes as NDATA (is_historical), oldest first, under MAX_IN_FLIGHT. One
   * whose write fails (the connection going away again before it is written) is kept again
   * (#lostNode): a latch's history is not lost to a second outage during the replay of the first.
   */
  #drainNode(): void {
    let i = 0;
    while (i < this.#nodeKept.length && this.online && this.#inFlight < MAX_IN_FLIGHT) {
      const { timestampMs, atMono, metrics } = this.#nodeKept[i]!;
      const payload: Payload = { timestamp: timestampMs, metrics };
      // Not handed over (a split without room for all its parts): it stays, first of the rest.
      if (!this.#send("NDATA", undefined, payload, false, REPLAYED_NODE_DATA, atMono)) break;
      i++;
    }
    this.#nodeKept.splice(0, i);
    if (this.#nodeKept.length === 0) this.#nodeKeptWarned = false;
  }

  /** The node metrics now: the runtime's and the node's own count of foreign NBIRTHs. */
  #nodeState(): NodeState {
    return { ...this.#o.status(), foreignBirths: this.counts.foreignBirths };
  }

  /** Node metrics that differ from `before` (all of them in a birth). */
  #nodeMetrics(s: NodeState, before: NodeState | null, now: number, birth: boolean): Metric[] {
    const out: Metric[] = [];
    const add = (name: string, changed: boolean, fields: Metric, datatype: number) => {
      if (!birth && !changed) return;
      out.push({
        ...(birth ? { name } : {}),
        alias: this.#alias("", name),
        timestamp: now,
        ...(birth ? { datatype } : {}),
        ...fields,
      });
    };
    add(NODE_METRICS.mode, s.mode !== before?.mode, { string_value: s.mode }, DataType.String);
    add(
      NODE_METRICS.latched,
      s.estopLatched !== before?.estopLatched,
      { boolean_value: s.estopLatched },
      DataType.Boolean,
    );
    const int = (name: string, v: number, b: number | undefined) =>
      add(name, v !== b, { int_value: v >>> 0 }, DataType.Int32);
    int(NODE_METRICS.alarmsActive, s.alarmsActive, before?.alarmsActive);
    int(NODE_METRICS.alarmsUnacked, s.alarmsUnacked, before?.alarmsUnacked);
    int(NODE_METRICS.providersUp, s.providersUp, before?.providersUp);
    int(NODE_METRICS.providersDown, s.providersDown, before?.providersDown);
    add(
      NODE_METRICS.foreignBirths,
      s.foreignBirths !== before?.foreignBirths,
      { long_value: s.foreignBirths },
      DataType.UInt64,
    );
    return out;
  }

  // ---- commands ----

  /**
   * A message on a subscribed topic. A retained command (the broker's copy handed to this
   * connection's new subscription: it was published before, while the node was away or earlier
   * still; Sparkplug 3.0 publishes NCMD and DCMD with retain false) is ignored, whatever it
   * asks, the e-stop included: commands are events, not state, and the broker's copy would
   * repeat an old command at every reconnect (an e-stop latched again after every network
   * blip, a write over whatever the operator did since). A command published retained while the
   * node is subscribed arrives live (the broker clears the flag) and is taken.
   */
  #message(topic: string, payload: Uint8Array, retained: boolean): void {
    const o = this.#o;
    const ncmd = topicOf(o.config.groupId, "NCMD", o.edgeNodeId);
    const dcmd = `${topicOf(o.config.groupId, "DCMD", o.edgeNodeId)}/`;
    const host = o.config.primaryHostId;
    if (host !== "" && (topic === stateTopic(host) || topic === legacyStateTopic(host))) {
      return this.#hostState(topic, payload);
    }
    if (topic === topicOf(o.config.groupId, "NBIRTH", o.edgeNodeId)) {
      // A retained copy is of another time (Sparkplug publishes births with retain false).
      return retained ? undefined : this.#ownBirthSeen(payload);
    }
    if (retained && (topic === ncmd || topic.startsWith(dcmd))) return this.#retainedCommand(topic);
    if (payload.length > MAX_COMMAND_BYTES) {
      if (topic === ncmd) return this.#commandTooLarge(topic, payload.length, null);
      if (topic.startsWith(dcmd)) {
        return this.#commandTooLarge(topic, payload.length, topic.slice(dcmd.length));
      }
    }
    let decoded;
    try {
      decoded = decode(payload);
    } catch (err) {
      this.#ignored(topic, `undecodable payload: ${errorMessage(err)}`);
      return;
    }
    if (topic === ncmd) {
      for (const m of decoded.metrics ?? []) this.#nodeCommand(topic, m);
    } else if (topic.startsWith(dcmd)) {
      const id = topic.slice(dcmd.length);
      for (const m of decoded.metrics ?? []) this.#deviceCommand(topic, id, m);
    } else {
      this.#ignored(topic, "not a command topic of this edge node");
    }
  }

  /**
   * An NCMD (`deviceId` null) or DCMD over MAX_COMMAND_BYTES: refused unread (nothing of it is
   * decoded, nothing reaches a provider), counted and WARNed as any refusal (#refused, bounded),
   * and answered by the node's `Runtime/Command Result`, naming the NCMD or the DCMD's device
   * (which metrics it wrote is not read). A DCMD while commands are off, the role is viewer or the
   * runtime stops is answered with that reason, as any DCMD (#deviceCommand).
   */
  #commandTooLarge(topic: string, bytes: number, deviceId: string | null): void {
    const name = deviceId === null
      ? "NCMD"
      : `DCMD ${providerTextWithin(deviceId, SPARKPLUG_QUOTED_NAME_CHARS)}`;
    const first = deviceId === null
      ? null
      : this.#commandRefusal() ?? (this.#commandsClosed ? RUNTIME_STOPPING : null);
    this.#refused(
      topic,
      name,
      first ?? `payload of ${bytes} bytes, over ${MAX_COMMAND_BYTES} (MAX_COMMAND_BYTES): not ` +
          `read; send fewer or smaller metrics per command`,
      NODE,
    );
  }

  /**
   * A message on a session the node has left (#renew set it aside, its end under way): MQTT.js
   * hands on the packets it parsed before a forced end. Only an NCMD `Node Control/E-Stop` true
   * is taken (#nodeCommand: the latch first, the answer kept for the next births as any given
   * while not online): the e-stop works whatever the connection does. Anything else is dropped
   * unsaid, as of a session that is gone (the host saw its NDEATH); a retained copy too.
   */
  #staleMessage(topic: string, payload: Uint8Array, retained: boolean): void {
    const o = this.#o;
    if (retained || topic !== topicOf(o.config.groupId, "NCMD", o.edgeNodeId)) return;
    if (payload.length > MAX_COMMAND_BYTES) return; // not read: no valid e-stop is that large
    let metrics;
    try {
      metrics = decode(payload).metrics ?? [];
    } catch {
      return; // undecodable: no e-stop in it
    }
    for (const m of metrics) {
      if (this.#commandName(NODE, m) === NODE_METRICS.estop && m.boolean_value === true) {
        this.#nodeCommand(topic, m);
      }
    }
  }

  /**
   * An NBIRTH on this node's own topic, live (not a retained copy). The node hears its own: each
   * one it publishes after subscribing comes back once (MQTT 3.1.1 has no "no local"), with this
   * connection's bdSeq. Another client's is one whose bdSeq is neither this connection's nor that
   * of the node's latest connections (OWN_BDSEQS_KEPT: a late copy of its own), or one more of
   * this connection's bdSeq than the node published (the other client's bdSeq may be the same),
   * or one without a bdSeq the node can read. Counted (foreignBirths); the first WARNed: a host
   * sees one node born again and again, its data from two sources under one seq, and its NCMD
   * and DCMD reach both. A copy lost (QoS 0) hides one, never makes one. The count is a node
   * metric too (NODE_METRICS.foreignBirths, in NBIRTH and an NDATA when it changes).
   */
  #ownBirthSeen(payload: Uint8Array): void {
    let bdSeq: number | null = null;
    try {
      const m = decode(payload).metrics?.find((x) => x.name === NODE_METRICS.bdSeq);
      const n = Number(m?.long_value ?? NaN);
      if (Number.isSafeInteger(n)) bdSeq = n;
    } catch {
      // Not a Sparkplug payload: not the node's own.
    }
    if (bdSeq === this.#bdSeq && ++this.#birthsHeard <= this.#birthsSent) return;
    if (bdSeq !== null && bdSeq !== this.#bdSeq && this.#ownBdSeqs.includes(bdSeq)) return;
    this.counts.foreignBirths++;
    // The host learns it too: an NDATA of NODE_METRICS.foreignBirths (the fleet view shows it).
    // Not online (births waiting for the primary host): the next NBIRTH carries it, and another
    // client's births are no history to keep (#keepNode) for it to push the node's own out.
    if (this.online) this.#nodeSoon();
    if (this.#foreignBirthSaid) return;
    this.#foreignBirthSaid = true;
    const o = this.#o;
    this.#log.warn(
      `sparkplug: another client published an NBIRTH as this edge node ` +
        `(group ${JSON.stringify(o.config.groupId)}, edge node ${JSON.stringify(o.edgeNodeId)}, ` +
        `bdSeq ${bdSeq ?? "unreadable"}; this connection's is ${this.#bdSeq}): two runtimes ` +
        `(or another edge node) with one edge node id on this broker, each with its own client ` +
        `id; a host sees one node born again and again, and its NCMD/DCMD reach both. Give each ` +
        `a distinct runtime.name or sparkplug.edge_node_id (further ones are counted in ` +
        `runtime_sparkplug_foreign_births_total, not logged)`,
    );
  }

  /**
   * A retained command (#message): not acted on, not answered (an answer would stand at the host
   * for a command of another time), counted as ignored; WARNed once per topic per connection
   * (the broker hands it again at every connection until someone clears it).
   */
  #retainedCommand(topic: string): void {
    this.counts.commandsIgnored++;
    if (this.#retainedWarned.has(topic)) return;
    if (this.#retainedWarned.size >= MAX_RETAINED_TOPICS_WARNED) {
      if (this.#retainedOverWarned) return;
      this.#retainedOverWarned = true;
      this.#log.warn(
        `sparkplug: retained commands on more than ${MAX_RETAINED_TOPICS_WARNED} topics ` +
          `(MAX_RETAINED_TOPICS_WARNED) on this connection: the rest are ignored without a line`,
      );
      return;
    }
    this.#retainedWarned.add(topic);
    this.#log.warn(
      `sparkplug: retained command on ${
        quoteName(topic)
      } ignored, not acted on: the broker's copy of an ` +
        `old command (Sparkplug publishes NCMD/DCMD with retain false); clear it on the broker ` +
        `(an empty retained message on that topic)`,
    );
  }

  /** The metric name a command names (by name, or by an alias of this node). */
  #commandName(deviceId: string, m: Record<string, unknown>): string | null {
    if (typeof m.name === "string") return m.name;
    const alias = typeof m.alias === "number" ? m.alias : Number(m.alias);
    const named = this.#aliasNames.get(alias);
    return named?.deviceId === deviceId ? named.name : null;
  }

  #nodeCommand(topic: string, m: Record<string, unknown>): void {
    const name = this.#commandName("", m);
    if (name === NODE_METRICS.rebirth) {
      if (m.boolean_value !== true) {
        return this.#ignored(topic, `${name} written ${String(m.boolean_value)}`);
      }
      // Not online (the births wait for the primary host, or for a new connection): rebirth()
      // publishes nothing, and the births follow once the node may be born.
      if (!this.online) {
        const why = this.#notOnlineWhy();
        return this.#ignored(
          topic,
          why === NOT_ONLINE
            ? `${name} while ${why}; its births follow once it is`
            : `${name}: ${why}`,
        );
      }
      // Its NBIRTH grown over max_message_bytes since the births: they stand, and the line says
      // so rather than that births are published.
      const over = this.#nbirthOverBound();
      if (over !== null) return this.#ignored(topic, `${name}: ${this.#rebirthTooLargeWhy(over)}`);
      this.#rebirthAsked();
      return;
    }
    if (name === NODE_METRICS.estop && m.boolean_value === false) {
      // A momentary control set back (some hosts write true, then false): nothing to do.
      return this.#ignored(topic, `${name} written false`);
    }
    if (name === NODE_METRICS.estop && m.boolean_value === true) {
      const refusal = this.#commandRefusal();
      if (refusal !== null) return this.#refused(topic, name, refusal, NODE);
      // The stop runs on its own path: the answer waits for the latch, not for the ladder. OK
      // once latched; FAILED when the trigger threw first (no latch: the host must not rely on
      // it). A port that never reports the latch is answered when the stop settles.
      const latched = Promise.withResolvers<void>();
      // The latch is the command's first act: a log line before it (a logger that throws, a
      // closed stderr) would stand between the request and the stop.
      const stop = this.#o.commands!.estop(
        "Sparkplug NCMD Node Control/E-Stop",
        this.#source("NCMD"),
        () => latched.resolve(),
      );
      // Its lines never throw: one a logger fails to write is lost, never the answer; a rejection
      // logged by a logger that throws would be unhandled (it ends the runtime).
      const stopLog = neverThrowing(this.#log);
      stopLog.warn("sparkplug: e-stop requested by NCMD Node Control/E-Stop; triggered");
      stop.catch((err) => stopLog.error(`sparkplug: e-stop failed: ${errorMessage(err)}`));
      void Promise.race([
        latched.promise.then(() => null),
        stop.then(() => null, (err: unknown) => err),
      ]).then((err) =>
        this.#contain(`the answer to ${quoteName(name)}`, () => {
          if (err === null) {
            this.counts.commandsAccepted++;
            this.#commandResult(NODE, name, "OK");
          } else {
            this.counts.commandsFailed++;
            this.#commandResult(NODE, name, `FAILED: ${errorMessage(err)}`);
          }
        })
      );
      return;
    }
    if (name === NODE_METRICS.estop) {
      // Written as another type than its birth's Boolean: not taken (true is the request), and
      // answered as such, not as a metric the node does not have.
      const refusal = this.#commandRefusal();
      if (refusal !== null) return this.#refused(topic, name, refusal, NODE);
      const field = VALUE_FIELDS.find((k) => m[k] !== undefined);
      const written = field === undefined ? "no value" : `${field} ${String(m[field])}`;
      return this.#refused(
        topic,
        name,
        `${name} is a Boolean: write true to trigger the e-stop (written: ${written})`,
        NODE,
      );
    }
    this.#refused(
      topic,
      name ?? `alias ${String(m.alias)}`,
      /clear|re-?arm|reset|release/i.test(name ?? "")
        ? "an e-stop is never cleared and the runtime never re-armed over Sparkplug"
        : "not a node command of this runtime (Node Control/Rebirth, Node Control/E-Stop)",
      NODE,
    );
  }

  /**
   * Why a device not born is still the configuration's, as a refusal: its provider is down (and
   * had it when last up, or never came up), or has it now and its DBIRTH has not gone out yet
   * (waiting for the writes in flight, or about to): `birthOf` names that provider, whose births
   * the answer follows (#answerAfterBirth); or its provider is configured with no process listed
   * (a reload restarting it or starting it anew, or one that failed to start it:
   * InventoryReader.whyNotRunning says which). Null for an id no configured provider has.
   */
  #notBorn(id: string): { readonly why: string; readonly birthOf?: string } | null {
    const big = this.#tooLarge.get(id);
    // Its provider down (the spell kept meanwhile): the device is down first of all.
    if (big !== undefined && !this.#providerDown(big.providerId)) {
      return {
        why: `device not born: its DBIRTH is ${big.bytes} bytes, over ` +
          `sparkplug.max_message_bytes ${this.#o.config.maxMessageBytes}`,
      };
    }
    for (const p of this.#o.inventory.providers()) {
      const has = p.devices.some((c) =>
        sparkplugDeviceId(c.device.providerId, c.device.deviceId) === id
      );
      if (p.available) {
        if (!has) continue;
        const why = this.#providersBehind.has(p.id)
          ? `device not born yet (its DBIRTH waits for the writes in flight: MAX_IN_FLIGHT ` +
            `${MAX_IN_FLIGHT}); send it again after the DBIRTH`
          : "device not born yet (its DBIRTH is about to go out); send it again after the DBIRTH";
        return { why, birthOf: p.id };
      }
      // Never came up (no devices known): any device id of its own, exactly (not a prefix). One
      // that came up with none had none of them.
      const had = p.devices.length === 0 && !this.#seenUp.has(p.id)
        ? sparkplugDeviceProvider(id) === p.id
        : has;
      if (!had) continue;
      // Listed down because the last reload failed to start it, or a running reload's new process
      // of it, registered and not up yet: said in the one wording of that, as the device
      // conditions and the e-stop say it (startFailureText, reloadStartWords).
      const failed = this.#o.inventory.startFailureText?.(p.id) ?? null;
      if (failed !== null) {
        return {
          why: `device down (${providerTextWithin(failed, SPARKPLUG_QUOTED_REASON_CHARS)})`,
        };
      }
      const start = this.#o.inventory.reloadStart?.(p.id) ?? null;
      return {
        why: start === null
          ? `device down (provider ${p.id} ${p.lifecycle})`
          : `device down (provider ${p.id} ${reloadStartWords(start)})`,
      };
    }
    // No provider of that id is listed, yet it is configured: a reload restarting it (its entry
    // changed), between the old process's removal and the new one's registration; or one a reload
    // starts anew (again, after the reload before failed to start it) before its registration; or
    // one the last reload failed to register (ProviderRegistry.whyNotRunning, the one wording of
    // why). Any device id of its own, exactly, as for one that never came up: what its next
    // process lists is unknown. A failed start's reason may carry the provider's words: cut.
    const owner = sparkplugDeviceProvider(id);
    if (owner === null || this.#o.inventory.provider(owner) !== undefined) return null;
    const notRunning = this.#o.inventory.whyNotRunning?.(owner) ?? null;
    if (notRunning === null) return null;
    return {
      why: `device down (${providerTextWithin(notRunning, SPARKPLUG_QUOTED_REASON_CHARS)})`,
    };
  }

  /**
   * Whether a provider is down: listed and not AVAILABLE, or configured with no process listed
   * (InventoryReader.configured: a reload restarting or starting it, or one it failed to start).
   * One neither listed nor configured is gone, not down.
   */
  #providerDown(providerId: string): boolean {
    const p = this.#o.inventory.provider(providerId);
    return p === undefined ? this.#o.inventory.configured?.(providerId) === true : !p.available;
  }

  /**
   * Notes a provider seen up (#seenUp); forgets one no longer configured, so the set holds at
   * most the configured providers.
   */
  #noteUp(providerId: string): void {
    const p = this.#o.inventory.provider(providerId);
    if (p === undefined) this.#seenUp.delete(providerId);
    else if (p.available) this.#seenUp.add(providerId);
  }

  /**
   * Why the node is not online, for a command refused or ignored meanwhile: NOT_ONLINE (its births
   * wait for the primary host or the broker), or, connected with the primary host online, that its
   * NBIRTH is over `sparkplug.max_message_bytes` (the births follow once a node metric's change
   * brings it within the bound).
   */
  #notOnlineWhy(): string {
    const bytes = this.#nbirthOverBytes;
    if (bytes === null || !this.#hostOnline || !this.connected) return NOT_ONLINE;
    return `the node cannot come online: its NBIRTH is ${bytes} bytes, over ` +
      `sparkplug.max_message_bytes ${this.#o.config.maxMessageBytes} (${NBIRTH_TOO_LARGE_CURES})`;
  }

  /** Why commands cannot act at all now (off, or the role), or null. */
  #commandRefusal(): string | null {
    if (this.#o.commands === undefined) return "commands are off (sparkplug.commands: false)";
    if (this.#o.config.role === "viewer") return "sparkplug.role is viewer";
    return null;
  }

  #source(cause: "DCMD" | "NCMD"): AuditOrigin {
    return { kind: "sparkplug", cause, token_name: this.#o.config.role };
  }

  #deviceCommand(topic: string, id: string, m: Record<string, unknown>): void {
    const name = this.#commandName(id, m);
    const dev = this.#devices.get(id);
    // Commands off, the viewer role or the runtime stopping refuse every DCMD, whatever it names:
    // said first, so a host is never told of a device or an alias to send it again by, which could
    // not succeed either.
    const refusal = this.#commandRefusal() ?? (this.#commandsClosed ? RUNTIME_STOPPING : null);
    if (refusal !== null) {
      const metric = name ?? `alias ${String(m.alias)}`;
      if (dev === undefined || name === null) {
        return this.#refused(topic, `${id}/${metric}`, refusal, NODE);
      }
      return this.#refused(topic, name, refusal, id);
    }
    if (dev === undefined) {
      // No device of this node by that id (down, gone, never born, mistyped): no alias of it is
      // known, so the node answers, naming the device as for a metric that is no function of one.
      const metric = name ?? `alias ${String(m.alias)}`;
      const notBorn = this.#notBorn(id);
      // Its provider lists it, but the node is not online: no DBIRTH is about to go out (the
      // births wait for the primary host or the broker), and the answer could not be published.
      if (notBorn?.birthOf !== undefined && !this.online) {
        return this.#refused(topic, `${id}/${metric}`, this.#notOnlineWhy(), NODE);
      }
      const why = notBorn?.why ?? "no such device on this node";
      if (notBorn?.birthOf === undefined) return this.#refused(topic, `${id}/${metric}`, why, NODE);
      // Published after the DBIRTH it names: a host never reads "not born" about a device it
      // already holds the birth of, nor before it, depending on which write completed first.
      this.#refused(topic, `${id}/${metric}`, why);
      return this.#answerAfterBirth(notBorn.birthOf, `${id}/${metric}`, `REFUSED: ${why}`);
    }
    if (name === null) {
      // Answered (by the node, naming the device: the alias names no metric of it), so a host
      // holding an alias from before the device was born again learns to take the new one.
      return this.#refused(
        topic,
        `alias ${String(m.alias)}`,
        "unknown metric (no metric of the device's current DBIRTH has this alias: a device born " +
          "again has new aliases)",
        id,
      );
    }
    // After its NDEATH (the primary host went offline, or the connection was lost) the node is
    // dead to the group until its next births: a write addressed to it then acts on nothing, and
    // its answer could not be published. (An NCMD e-stop is still taken: the stop never waits.)
    if (!this.online) return this.#refused(topic, name, this.#notOnlineWhy(), id);
    const caps = this.#o.inventory.capabilities(dev.providerId, dev.deviceId);
    // The last declaration of a duplicated name: the one the call path (and the AUTO gate)
    // resolves by name, so the arguments are typed by the declaration they are validated against.
    const fn = caps?.functions.findLast((f) => functionMetricName(f.name) === name);
    if (fn === undefined) {
      const why = dev.signals.has(name)
        ? "signals are read-only; write a Functions/<name> metric"
        : "no such function";
      return this.#refused(topic, name, why, id);
    }
    const args = commandArgs(fn, m);
    if (typeof args === "string") return this.#refused(topic, name, args, id);
    if (this.#commandsInProgress >= MAX_COMMANDS_IN_PROGRESS) {
      return this.#refused(
        topic,
        name,
        `busy: ${MAX_COMMANDS_IN_PROGRESS} commands in progress (MAX_COMMANDS_IN_PROGRESS)`,
        id,
      );
    }
    this.#commandsInProgress++;
    this.#o.commands!.call({
      providerId: dev.providerId,
      deviceId: dev.deviceId,
      functionName: fn.name,
      args,
      // Gated exactly as an operator's call (mode, latch, interlocks, policies); the audit
      // trail names the broker (origin kind sparkplug).
      origin: "manual",
      source: { ...this.#source("DCMD"), device_handle: `${dev.providerId}/${dev.deviceId}` },
    }).then(
      () =>
        this.#contain(`the answer to ${quoteName(name)}`, () => {
          this.counts.commandsAccepted++;
          this.#commandResult(id, name, "OK");
        }),
      (err) =>
        this.#contain(`the answer to ${quoteName(name)}`, () => {
          if (reachedProvider(err)) this.#failed(topic, name, err, id);
          else this.#refused(topic, name, errorMessage(err), id);
        }),
    ).finally(() => this.#commandsInProgress--);
  }

  /**
   * A DCMD call the provider got and that then failed: not "refused", it may have acted (as the
   * audit trail's `failed`). Counted, logged (bounded), published back as `FAILED: <code>: <why>`.
   */
  #failed(topic: string, name: string, err: unknown, deviceId: string): void {
    this.counts.commandsFailed++;
    const n = this.counts.commandsFailed;
    const e = toRuntimeError(err);
    const why = `${e.code}: ${e.message}`;
    if (n <= 100 || n % 1000 === 0) {
      this.#log.warn(
        `sparkplug: command ${quoteName(name)} on ${quoteName(topic)} failed after the provider ` +
          `got it (${n} so far): ${quoteProviderTextWithin(why, SPARKPLUG_QUOTED_REASON_CHARS)}`,
      );
    }
    this.#commandResult(deviceId, name, `FAILED: ${why}`);
  }

  /**
   * A refused command: counted, logged (bounded) and published back: for a device (a DCMD), or
   * for the node (`NODE`: an NCMD).
   */
  #refused(topic: string, name: string, why: string, deviceId?: string): void {
    this.counts.commandsRefused++;
    const n = this.counts.commandsRefused;
    if (n <= 100 || n % 1000 === 0) {
      this.#log.warn(
        `sparkplug: command ${quoteName(name)} on ${quoteName(topic)} refused (${n} so far): ${
          quoteProviderTextWithin(why, SPARKPLUG_QUOTED_REASON_CHARS)
        }`,
      );
    }
    if (deviceId !== undefined) this.#commandResult(deviceId, name, `REFUSED: ${why}`);
  }

  /**
   * The outcome of a command (OK, REFUSED: why, FAILED: why): a DCMD's as a DDATA of the metric it
   * wrote (`Functions/<name>`, a String); an NCMD's (`deviceId` NODE), and a DCMD's that wrote no
   * function of the device, as an NDATA of `Runtime/Command Result` naming the metric (Node
   * Control/E-Stop is a Boolean, and a refused one may not be in the NBIRTH at all). Not while the
   * node is not online (nobody could read it).
   */
  #commandResult(deviceId: string, name: string, text: string): void {
    if (!this.online) {
      if (deviceId === NODE && name === NODE_METRICS.estop) {
        this.#keepEstopAnswerNow(this.#monoNow("an NCMD e-stop's answer"), `${name}: ${text}`);
      }
      return;
    }
    if (deviceId !== NODE) {
      const dev = this.#devices.get(deviceId);
      // Not born now (it left while its call ran: a DDEATH, or a new connection's births without
      // it): its metric is gone with it, and the outcome is the node's to tell.
      if (dev === undefined) return this.#commandResult(NODE, `${deviceId}/${name}`, text);
      // Only a function metric (a String) carries its own answer: on a signal's alias a String
      // would be taken for the signal's value, and a name the DBIRTH did not declare has no alias
      // a host knows. The node answers for it, naming the device.
      if (!dev.functions.has(name)) return this.#commandResult(NODE, `${deviceId}/${name}`, text);
    }
    const key = `${deviceId}\u0000${name}`;
    // Its time (null: the clock failed; it waits for the clock as for the writes: #clockRetried).
    const now = this.#wallNow("the answer to a command");
    if (
      this.#inFlight >= MAX_IN_FLIGHT || this.#answersWaiting.size > 0 ||
      this.#nodeKept.length > 0 || now === null
    ) {
      // Under the bound like data; the latest answer of a metric replaces an older one waiting.
      // Behind the node changes kept while away too (history first, then the present): their
      // replay may stop at a split whose parts do not all fit, with a write still free.
      this.#answersWaiting.delete(key);
      if (
        this.#answersWaiting.size >= MAX_ANSWERS_WAITING && deviceId === NODE &&
        name === NODE_METRICS.estop
      ) {
        // The e-stop's answer is not the one that goes: the oldest waiting answer makes room.
        const oldest = this.#answersWaiting.keys().next().value!;
        this.#answersWaiting.delete(oldest);
        this.counts.publishFailures++;
      }
      if (this.#answersWaiting.size < MAX_ANSWERS_WAITING) {
        this.#answersWaiting.set(key, {
          deviceId,
          name,
          text,
          atMs: now,
          atMono: this.#monoNow("the answer to a command"),
        });
      } else {
        this.counts.publishFailures++;
      }
      return;
    }
    this.#answer(deviceId, name, text, now);
  }

  /**
   * Sends the answers waiting, oldest first, while writes are under MAX_IN_FLIGHT and no node
   * change kept while away waits (#drainNode stopped at a split).
   */
  #sendAnswers(): void {
    // Dated when they go out (the answer's publish time), one read for them all; they wait on
    // for a clock that fails (#clockRetried).
    let now: number | null | undefined;
    for (const [key, a] of this.#answersWaiting) {
      if (!this.online || this.#inFlight >= MAX_IN_FLIGHT || this.#nodeKept.length > 0) return;
      now ??= this.#wallNow("the answer to a command");
      if (now === null) return;
      this.#answersWaiting.delete(key);
      this.#answer(a.deviceId, a.name, a.text, now);
    }
  }

  /** Publishes the answer to a command, dated `now`. */
  #answer(deviceId: string, name: string, text: string, now: number): void {
    if (deviceId === NODE) {
      // An e-stop's answer that fails with the connection is kept (#lostNode), as a latch is.
      const payload: Payload = {
        timestamp: now,
        metrics: [{
          alias: this.#alias(NODE, NODE_METRICS.commandResult),
          timestamp: now,
          string_value: `${name}: ${text}`,
        }],
      };
      const liveSeq = name === NODE_METRICS.estop ? 0 : undefined;
      this.#send("NDATA", undefined, payload, false, liveSeq, this.#monoNow("the answer"));
      return;
    }
    // Left while its answer waited for the writes, or born again meanwhile without the function
    // it wrote (a Rebirth, its provider's function gone): its alias is no metric of the device's
    // current DBIRTH, which a host could not read. The node tells it, naming the device.
    if (this.#devices.get(deviceId)?.functions.has(name) !== true) {
      return this.#answer(NODE, `${deviceId}/${name}`, text, now);
    }
    this.#send("DDATA", deviceId, {
      timestamp: now,
      metrics: [{ alias: this.#alias(deviceId, name), timestamp: now, string_value: text }],
    }, false);
  }

  #ignored(topic: string, why: string): void {
    this.counts.commandsIgnored++;
    const n = this.counts.commandsIgnored;
    // Bounded logging: a flood of commands is not a flood of log lines.
    if (n <= 10 || n % 1000 === 0) {
      this.#log.warn(
        `sparkplug: command on ${quoteName(topic)} ignored (${n} so far): ${
          providerTextWithin(why, SPARKPLUG_QUOTED_REASON_CHARS)
        }`,
      );
    }
  }

  // ---- publishing ----

  #topic(type: MessageType, deviceId?: string): string {
    return topicOf(this.#o.config.groupId, type, this.#o.edgeNodeId, deviceId);
  }

  /**
   * The NDEATH (the will registered at CONNECT, or published on leaving). A wall clock that fails
   * leaves its timestamp out rather than the connection unopened: Sparkplug 3.0 asks a timestamp
   * of DDEATH, not of NDEATH (whose will is dated at CONNECT anyway, and which a Sparkplug-aware
   * broker may re-date at delivery); its bdSeq is what a host reads.
   */
  #deathPayload(): Uint8Array {
    const now = this.#wallNow("the node's death (NDEATH)");
    const metrics = [
      { name: NODE_METRICS.bdSeq, datatype: DataType.UInt64, long_value: this.#bdSeq },
    ];
    return encode(now === null ? { metrics } : { timestamp: now, metrics });
  }

  #alias(deviceId: string, name: string): number {
    let names = this.#aliases.get(deviceId);
    if (names === undefined) this.#aliases.set(deviceId, names = new Map());
    let a = names.get(name);
    if (a === undefined) {
      names.set(name, a = this.#nextAlias++);
      this.#aliasNames.set(a, { deviceId, name });
      this.#aliasCount++;
    }
    return a;
  }

  /**
   * Publishes with the next seq; births and deaths always go, data only under the bound. Whether
   * it was handed to the session.
   */
  #send(
    type: MessageType,
    deviceId: string | undefined,
    p: Payload,
    always: boolean,
    /**
     * Live data store and forward takes back should its write fail (#lost, #lostNode): for a
     * DDATA the poll sequence of its changes; for an NDATA of node metric changes 0 when live,
     * REPLAYED_NODE_DATA when kept ones are replayed (#drainNode).
     */
    liveSeq?: number,
    /**
     * For a node NDATA, the monotonic time of the node change it carries (#lostNode keeps it there
     * in #nodeKept should its write fail); for a DDATA without the ring, the monotonic time its
     * changes were polled (#lost keeps it in that place in #store).
     */
    atMono?: number,
  ): boolean {
    const session = this.#session;
    if (session === null || !session.connected || this.#stopped) return false;
    if (!always && this.#inFlight >= MAX_IN_FLIGHT) {
      this.counts.publishFailures++;
      return false;
    }
    p.seq = type === "NBIRTH" ? 0 : this.#seq;
    const bytes = encode(p);
    const qos = type === "DDATA" || type === "NDATA" ? this.#o.config.qos : 0;
    const limit = this.#o.config.maxMessageBytes;
    // Built once: sized against the bound, recorded as the largest write, published.
    const topic = this.#topic(type, deviceId);
    if (limit !== null && mqttPacketBytes(topic, bytes.length, qos) > limit) {
      // Never over the broker's bound: data is split (a metric alone too large left out);
      // births are measured before (#deviceBirth, #nbirthTooLarge), a DDEATH is a few bytes.
      if (type === "DDATA" || type === "NDATA") {
        return this.#sendSplit(type, deviceId, topic, p, always, limit, qos, liveSeq, atMono);
      }
      this.counts.publishFailures++;
      return false;
    }
    this.#seq = (p.seq + 1) % 256;
    if (bytes.length > (this.#largestWrite?.bytes ?? -1)) {
      this.#largestWrite = { topic, bytes: bytes.length };
    }
    this.#inFlight++;
    const ring = type === "DDATA" && liveSeq !== undefined && this.#o.replay !== undefined;
    if (ring) this.#liveInFlight++;
    // A write of a birth set (#births) counts in it until it settles (#rebirthAsked).
    const set = this.#birthSetOpen;
    if (set !== null) set.writes++;
    session.publish(topic, bytes, qos).then(() => {
      this.#inFlight--;
      if (set !== null) set.writes--;
      this.counts.published++;
      if (ring) this.#liveWritten(deviceId!, liveSeq!);
      this.#contain("store and forward", this.#afterWrite);
    }, (err) => {
      this.#inFlight--;
      if (ring) this.#liveInFlight--;
      this.counts.publishFailures++;
      // The set's last write failed, the session up: a Rebirth folded behind it is not held.
      if (set !== null && --set.writes === 0 && this.#rebirthFolded) {
        this.#contain("a Rebirth", this.#foldedRebirth);
      }
      this.#log.debug(`sparkplug: ${type} not published: ${errorMessage(err)}`);
      if (liveSeq === undefined) return;
      if (type === "NDATA") {
        this.#contain(
          "store and forward",
          () => this.#lostNode(p, liveSeq === REPLAYED_NODE_DATA, atMono),
        );
      } else if (deviceId !== undefined) {
        this.#contain("store and forward", () => this.#lost(deviceId, p, liveSeq, atMono));
      }
    });
    return true;
  }

  /**
   * A DDATA/NDATA over `sparkplug.max_message_bytes` as several, each under it, its metrics in
   * order (Sparkplug allows several per device; each gets the next seq through #send). A metric
   * alone too large is left out: counted (tooLargeDropped), WARNed once. All parts or none: data
   * (not `always`) goes only with room under MAX_IN_FLIGHT for every part (with none in flight a
   * split of more parts than that goes whole), since a caller whose message did not go out sends
   * it again whole (#publishNode) or keeps it (#flush, #drainNode): parts handed over before the
   * bound was hit would reach the host twice. Whether it was handed over (a metric left out for
   * its size is not a failure: it would never fit).
   */
  #sendSplit(
    type: "DDATA" | "NDATA",
    deviceId: string | undefined,
    topic: string,
    p: Payload,
    always: boolean,
    limit: number,
    qos: 0 | 1,
    liveSeq: number | undefined,
    atMono: number | undefined,
  ): boolean {
    const parts = splitMetrics(
      p.metrics ?? [],
      // The largest seq (two bytes of varint): every part fits whatever seq it gets.
      mqttPacketBytes(topic, 0, qos) +
        encode({ timestamp: p.timestamp, metrics: [], seq: 255 }).length,
      limit,
    );
    // Before the metrics left out are counted: one not handed over now comes again.
    if (!always && this.#inFlight > 0 && this.#inFlight + parts.parts.length > MAX_IN_FLIGHT) {
      this.counts.publishFailures++;
      return false;
    }
    for (const m of parts.dropped) {
      this.counts.tooLargeDropped++;
      this.#metricTooLargeSay(type, deviceId, m, limit);
    }
    for (const metrics of parts.parts) {
      const part: Payload = { timestamp: p.timestamp, metrics };
      // Past the room check #send fails only without a session, then for the first part alike.
      if (!this.#send(type, deviceId, part, true, liveSeq, atMono)) return false;
    }
    return true;
  }

  /**
   * A metric left out of a DDATA/NDATA for its size: WARNed once per device (the node counted as
   * one), for at most MAX_TOO_LARGE_DEVICES_WARNED devices, then one line says the rest are not.
   */
  #metricTooLargeSay(
    type: "DDATA" | "NDATA",
    deviceId: string | undefined,
    m: Metric,
    limit: number,
  ): void {
    const key = deviceId ?? NODE;
    if (this.#metricTooLargeSaid.has(key)) return;
    if (this.#metricTooLargeSaid.size >= MAX_TOO_LARGE_DEVICES_WARNED) {
      if (this.#metricTooLargeOverSaid) return;
      this.#metricTooLargeOverSaid = true;
      this.#log.warn(
        `sparkplug: metrics left out for their size on more than ${MAX_TOO_LARGE_DEVICES_WARNED} ` +
          `devices (MAX_TOO_LARGE_DEVICES_WARNED): further devices' are counted in ` +
          `runtime_sparkplug_too_large_dropped_total, not logged`,
      );
      return;
    }
    this.#metricTooLargeSaid.add(key);
    const name = this.#aliasNames.get(Number(m.alias))?.name ??
      `alias ${String(m.alias)}`;
    this.#log.warn(
      `sparkplug: ${type} metric ${quoteName(name)} of ${
        deviceId === undefined ? "the node" : quoteName(deviceId)
      } left out: alone it makes ` +
        `a message over sparkplug.max_message_bytes ${limit} (further ones of it are counted in ` +
        `runtime_sparkplug_too_large_dropped_total, not logged)`,
    );
  }

  /**
   * A live DDATA was written: remembered for a replay that may yet start from an earlier poll,
   * one resumed after its device's next DBIRTH from a saved position (#replayAfterBirth) too.
   */
  #liveWritten(deviceId: string, seq: number): void {
    this.#liveInFlight--;
    if (this.#parkedWritten.has(deviceId)) this.#keepParkedWritten(deviceId, seq);
    if (
      this.#liveInFlight === 0 && this.#outage === null && this.#walkHead === this.#walks.length
    ) {
      // No replay waits and none in flight: only a device whose position waits for its next
      // DBIRTH can need them (its replay resumes from a poll before those it wrote live), and
      // only its own (kept in #parkedWritten).
      for (const id of [...this.#parkedWritten.keys()]) {
        if (!this.#replayAfterBirth.has(id)) this.#forgetParkedWritten(id);
      }
      if (this.#replayAfterBirth.size === 0) {
        this.#liveOutCount = 0;
        return;
      }
      if (!this.#replayAfterBirth.has(deviceId)) return;
    }
    this.#liveOutIds[this.#liveOutNext] = deviceId;
    this.#liveOutSeqs[this.#liveOutNext] = seq;
    this.#liveOutNext = (this.#liveOutNext + 1) % LIVE_OUT_KEPT;
    if (this.#liveOutCount < LIVE_OUT_KEPT) this.#liveOutCount++;
  }

  /** Whether the live DDATA of this device's poll was written (then a replay skips it). */
  #wentOutLive(deviceId: string, seq: number): boolean {
    if (this.#parkedWritten.get(deviceId)?.has(seq) === true) return true;
    for (let k = 1; k <= this.#liveOutCount; k++) {
      const i = (this.#liveOutNext - k + LIVE_OUT_KEPT) % LIVE_OUT_KEPT;
      if (this.#liveOutSeqs[i] === seq && this.#liveOutIds[i] === deviceId) return true;
    }
    return false;
  }

  /**
   * An NDATA of node metric changes whose write failed after it was handed over (the connection
   * went away under it): kept with the changes noted while not online (#nodeKept, in the order
   * of the changes, is_historical), so a latch whose NDATA was cut off still reaches the host's
   * history before its release, after the next births. The births carry the metrics as they are
   * then.
   */
  #lostNode(p: Payload, replayed: boolean, atMono: number | undefined): void {
    if (this.#stopped) return;
    if (replayed && this.online) {
      // A replayed change failing on a connection still up (not a connection lost): dropped
      // (counted), not sent again and again.
      this.counts.storeDropped++;
      return;
    }
    this.#keepNodeAt(p.timestamp, atMono ?? this.#monoNow("a node change kept again"), p.metrics);
    this.#drainNode();
  }

  /**
   * Node metrics (an NDATA's) kept for the next births, is_historical, in the order the changes
   * happened: by `atMono` (the monotonic time of the change), not by their times, which a step
   * back of the wall clock since puts out of that order.
   */
  #keepNodeAt(timestampMs: number, atMono: number, metrics: Metric[]): void {
    for (const m of metrics) m.is_historical = true;
    const kept = this.#nodeKept;
    let i = kept.length;
    while (i > 0 && kept[i - 1]!.atMono > atMono) i--;
    kept.splice(i, 0, { timestampMs, atMono, metrics });
    if (kept.length > MAX_NODE_CHANGES_KEPT) this.#nodeKeptOver();
  }

  /**
   * The answer to an NCMD e-stop that could not be published (the node not online when it was
   * taken, or its connection gone while it waited): kept with the node metric changes
   * (#nodeKept, MAX_NODE_CHANGES_KEPT), published after the next births with is_historical at
   * the time it was given, so the host's history says the stop it asked for was taken. Other
   * answers go with their connection: the births carry the state they led to.
   */
  #keepEstopAnswer(atMs: number, atMono: number, value: string): void {
    if (this.#stopped) return;
    this.#keepNodeAt(atMs, atMono, [{
      alias: this.#alias(NODE, NODE_METRICS.commandResult),
      timestamp: atMs,
      string_value: value,
    }]);
  }

  /** An NCMD e-stop's answer given now (monotonic `atMono`), kept for the host's history. */
  #keepEstopAnswerNow(atMono: number, value: string): void {
    const now = this.#wallNow("an NCMD e-stop's answer kept for the host's history");
    if (now === null) this.#keepEstopAnswerUndated(atMono, value);
    else this.#keepEstopAnswer(now, atMono, value);
  }

  /**
   * An NCMD e-stop's answer to keep whose time the clock could not read: dated at its first read
   * that works (#datedEstopAnswers), MAX_ANSWERS_WAITING at most (the oldest makes room).
   */
  #keepEstopAnswerUndated(atMono: number, value: string): void {
    if (this.#stopped) return;
    this.#estopAnswersUndated.push({ atMono, value });
    if (this.#estopAnswersUndated.length > MAX_ANSWERS_WAITING) {
      this.#estopAnswersUndated.shift();
      this.counts.publishFailures++;
    }
  }

  /** The answers waiting for writes on a connection that is gone: an e-stop's is kept. */
  #dropAnswersWaiting(): void {
    for (const a of this.#answersWaiting.values()) {
      if (a.deviceId === NODE && a.name === NODE_METRICS.estop) {
        const value = `${a.name}: ${a.text}`;
        if (a.atMs === null) this.#keepEstopAnswerUndated(a.atMono, value);
        else this.#keepEstopAnswer(a.atMs, a.atMono, value);
      }
    }
    this.#answersWaiting.clear();
  }

  /**
   * A live DDATA whose write failed after it was handed over (the connection went away under it:
   * MQTT.js fails a QoS 0 write on a closed socket, and the session's end one never acknowledged)
   * is store and forward's like data that found the node offline: with the history ring its
   * device's outage starts at its poll (the ring holds the change: replayed after the next births,
   * or once writes drain); without it, it joins the queue with is_historical. A device not born
   * now (left meanwhile: its DDEATH went after this DDATA): with the ring, live or replayed, the
   * position its replay goes on from after its next DBIRTH moves back to this poll (#parkAt), so
   * the host gets it then, with is_historical; without it, it is lost, as its queued data. (A lost
   * connection is known by then: the client fails the write before it reports the close, this
   * runs a microtask later.)
   */
  #lost(deviceId: string, p: Payload, seq: number, atMono?: number): void {
    if (this.#stopped) return;
    const replayed = p.metrics.some((m) => m.is_historical === true);
    const born = this.#devices.has(deviceId);
    if (!born && this.#o.replay === undefined) return;
    if (this.online && replayed) {
      // A replayed DDATA failing on a connection still up (not a connection lost): dropped
      // (counted), not replayed again and again.
      this.counts.storeDropped++;
      return;
    }
    if (this.#o.replay !== undefined) {
      let atMs = p.timestamp;
      for (const m of p.metrics) atMs = Math.min(atMs, Number(m.timestamp));
      if (!born) {
        // A DDATA handed over before its device's DDEATH (live, or replayed): the ring holds its
        // poll, replayed after the device's next DBIRTH (#replayAfterBirth) from this poll, or
        // from an earlier one already saved (the rest of a replay its DDEATH cut).
        this.#parkAt(deviceId, { atMs, seq });
        return;
      }
      this.#noteOutage(deviceId, { atMs, seq });
      // Still online (a write failed on a live connection): nothing else may start the replay.
      this.#pump();
      return;
    }
    // In its place: a replayed one before the newer data kept meanwhile.
    this.#keep(
      deviceId,
      p.metrics,
      p.timestamp,
      atMono ?? this.#monoNow("data kept again (DDATA)"),
    );
    this.#drain();
  }
}

/** The Sparkplug 3.0 STATE topic of a host application. */
export function stateTopic(hostId: string): string {
  return `spBv1.0/STATE/${hostId}`;
}

/** The STATE topic of hosts before Sparkplug 3.0 (payload `ONLINE` / `OFFLINE`). */
export function legacyStateTopic(hostId: string): string {
  return `STATE/${hostId}`;
}

/**
 * The arguments of a DCMD writing `Functions/<name>`: a String value holding a JSON object of
 * arguments by name, or, for a function of one argument, that argument's value (Boolean, number or
 * String metric), or nothing for a function without arguments. Typed by the function's argument
 * specs; ranges and required arguments are then checked by the call path. A string is an error.
 */
export function commandArgs(
  fn: FunctionSpec,
  m: Record<string, unknown>,
): Record<string, TypedValue> | string {
  const raw = scalarOf(m);
  if (typeof raw === "string" && raw.trimStart().startsWith("{")) {
    let parsed: unknown;
    // The JSON text of each member parsing rounded into an integer (digits beyond 2^53, a
    // fraction below a double's precision), by the object holding it: an integer argument
    // refuses it.
    const rounded = new Map<object, Map<string, string>>();
    try {
      parsed = JSON.parse(
        raw,
        function (this: object, key: string, value: unknown, context?: { source?: string }) {
          const source = context?.source;
          if (
            typeof value === "number" && Number.isInteger(value) && source !== undefined &&
            !integerWrittenExactly(source, value)
          ) {
            let keys = rounded.get(this);
            if (keys === undefined) rounded.set(this, keys = new Map());
            keys.set(key, source);
          }
          return value;
        },
      );
    } catch {
      return "the value is not a JSON object of arguments";
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return "the value is not a JSON object of arguments";
    }
    const out: Record<string, TypedValue> = {};
    for (const [k, v] of Object.entries(parsed)) {
      const spec = fn.args.find((a) => a.name === k);
      // The host's text (a name, a number as written) is cut and quoted as in a log line: the
      // answer published back stays short whatever the DCMD carried.
      if (spec === undefined) return `unknown argument ${quoteName(k)}`;
      const written = rounded.get(parsed)?.get(k);
      if ((spec.type === "int64" || spec.type === "uint64") && written !== undefined) {
        return `argument ${k}: ${
          providerTextWithin(written, SPARKPLUG_QUOTED_NAME_CHARS)
        } is not an integer as written (a JSON number read as a double: it would arrive as ${
          String(v)
        })`;
      }
      const t = typedArg(spec, v);
      if (typeof t === "string") return t;
      out[k] = t;
    }
    return out;
  }
  if (fn.args.length === 0) return {};
  if (fn.args.length === 1 && raw !== undefined) {
    const spec = fn.args[0]!;
    const t = typedArg(spec, asDeclared(m, raw, spec.type));
    return typeof t === "string" ? t : { [spec.name]: t };
  }
  return `${fn.name} takes ${fn.args.length} arguments: write a JSON object of them as a String`;
}

/** The metric field a value of each type travels in (valueFields). */
const VALUE_FIELD_OF: Readonly<Record<ValueType, string>> = {
  double: "double_value",
  int64: "long_value",
  uint64: "long_value",
  bool: "boolean_value",
  string: "string_value",
  bytes: "bytes_value",
};

const VALUE_FIELDS = [
  "boolean_value",
  "string_value",
  "double_value",
  "float_value",
  "long_value",
  "int_value",
];

/** The time of a device's earliest change waiting for a flush (each its poll's). */
function earliestOf(signals: ReadonlyMap<string, PendingSignal>): number {
  let atMs = Infinity;
  for (const p of signals.values()) atMs = Math.min(atMs, p.timestampMs);
  return atMs;
}

function scalarOf(m: Record<string, unknown>): unknown {
  for (const k of VALUE_FIELDS) if (m[k] !== undefined) return m[k];
  return undefined;
}

/**
 * A metric's integer value as the signed or unsigned number its datatype declares: Sparkplug B
 * carries `int_value` as a uint32 and `long_value` as a uint64, so an Int8/Int16/Int32 -5 arrives
 * as 4294967291 and an Int64 -5 as 2^64-5. A long without a datatype is read as the argument's
 * type says (signed for an int64).
 */
function asDeclared(m: Record<string, unknown>, raw: unknown, argType: ArgSpec["type"]): unknown {
  const dt = typeof m.datatype === "number" ? m.datatype : undefined;
  if (m.int_value !== undefined && raw === m.int_value && typeof raw === "number") {
    return dt === DataType.Int8 || dt === DataType.Int16 || dt === DataType.Int32 ? raw | 0 : raw;
  }
  if (m.long_value !== undefined && raw === m.long_value && typeof raw === "bigint") {
    const signed = dt === DataType.Int64 || (dt === undefined && argType === "int64");
    return signed ? BigInt.asIntN(64, raw) : raw;
  }
  return raw;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

function typedArg(spec: ArgSpec, v: unknown): TypedValue | string {
  const bad = `argument ${spec.name}: expected ${spec.type ?? "a typed value"}, got ${typeof v}`;
  switch (spec.type) {
    case "bool":
      return typeof v === "boolean" ? { type: "bool", bool: v } : bad;
    case "double":
      if (typeof v !== "number") return bad;
      // NaN passes the call path's bounds (it fails both comparisons) and +/-Infinity an unbounded
      // argument's; the HTTP API refuses both in a call's arguments (JSON has no such value).
      if (!Number.isFinite(v)) return `argument ${spec.name}: ${v} is not a finite double`;
      return { type: "double", double: v };
    case "string":
      return typeof v === "string" ? { type: "string", string: v } : bad;
    case "int64":
    case "uint64": {
      let n: number | bigint;
      if (typeof v === "bigint") n = v;
      else if (typeof v === "number" && Number.isInteger(v)) n = v;
      else return bad;
      const [min, max] = spec.type === "int64" ? [INT64_MIN, INT64_MAX] : [0n, UINT64_MAX];
      if (typeof n === "bigint" && (n < min || n > max)) {
        return `argument ${spec.name}: ${n} is out of range for ${spec.type}`;
      }
      if (typeof n === "bigint" && n >= Number.MIN_SAFE_INTEGER && n <= Number.MAX_SAFE_INTEGER) {
        n = Number(n);
      }
      return spec.type === "int64" ? { type: "int64", int64: n } : { type: "uint64", uint64: n };
    }
    default:
      return `argument ${spec.name}: type ${
        spec.type ?? "unspecified"
      } cannot be written over Sparkplug`;
  }
}
