/**
 * Exclusive resource claims (docs/http-api.md "Resource claims"). A device names the resources it
 * needs for itself in its `anolis.claim` descriptor tag, as keys separated by white space (e.g.
 * `i2c:/dev/i2c-1:0x61`); no key may have two owners across every provider's devices. Keys are
 * opaque and compared as exact strings: the runtime parses none, so it knows no transport.
 *
 * The older `hw.bus_path` + `hw.i2c_address` tags (both or neither) still count: a device carrying
 * them claims the key an I2C claim spells for that address, `i2c:<bus path as given>:0x<two-digit
 * lowercase hex>`, so a provider still publishing the old tags collides with one publishing the
 * claim for the same address. The address is read as anolis reads it, hexadecimal with or without
 * `0x` (`61` is 0x61, not decimal 61); one that is no hex number is compared as trimmed lower-case
 * text.
 */
import {
  type DeviceCapabilities,
  namedDeviceHandle,
  namedList,
  providerText,
} from "../common/mod.ts";

/** The descriptor tag a device lists its claims in. */
export const CLAIM_TAG = "anolis.claim";
/** The older bus ownership tags (given together or not at all). */
export const LEGACY_BUS_TAG = "hw.bus_path";
/** See LEGACY_BUS_TAG. */
export const LEGACY_ADDRESS_TAG = "hw.i2c_address";

/**
 * What separates the keys of a claim tag: ASCII white space only (space, tab, LF, VT, FF, CR), the
 * C locale's isspace that the anolis provider SDK splits the tag with (`istringstream >>`) and
 * refuses in a key (`add_claim`). Not JavaScript's `\s`: a no-break space, U+2028 or U+3000 is
 * part of a key, so a key holding one is one key, as anolis reads it, not two that may collide.
 */
const CLAIM_KEY_SEPARATOR = /[ \t\n\v\f\r]+/;

/** ASCII white space at either end of a text (the C locale's isspace, as CLAIM_KEY_SEPARATOR). */
const ASCII_SPACE_AROUND = /^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g;

/** A device's claims: its distinct keys in the order given, and what makes its tags invalid. */
export interface DeviceClaims {
  /** The `anolis.claim` keys, then the key the older bus tags imply (when not among them). */
  readonly keys: string[];
  /** Why the tags are refused (one older bus tag without the other); null when they are valid. */
  readonly error: string | null;
}

/** The claims the descriptor tags of one device make. */
export function deviceClaims(tags: Readonly<Record<string, string>>): DeviceClaims {
  // A Set, not keys.includes: the tag is the provider's, as long as a frame (some 200,000 keys),
  // and this runs for every device at each admission and each GET /v0/providers/health.
  const keys = new Set<string>();
  for (const k of (tags[CLAIM_TAG] ?? "").split(CLAIM_KEY_SEPARATOR)) if (k !== "") keys.add(k);
  const bus = tags[LEGACY_BUS_TAG];
  const addr = tags[LEGACY_ADDRESS_TAG];
  if (bus === undefined && addr === undefined) return { keys: [...keys], error: null };
  if (bus === undefined || addr === undefined) {
    return {
      keys: [...keys],
      error: `tags ${LEGACY_BUS_TAG} and ${LEGACY_ADDRESS_TAG} must be given together`,
    };
  }
  keys.add(legacyClaimKey(bus, addr));
  return { keys: [...keys], error: null };
}

/**
 * An I2C address as the older tags give it: hexadecimal digits, `0x`/`0X` first or not (anolis'
 * ownership check, core/runtime/ownership_validation.cpp parse_i2c_address, reads `61`, `0x61` and
 * `0X61` alike as 0x61, as i2cdetect prints them), possibly with ASCII white space around.
 */
const HEX_I2C_ADDRESS = /^(?:0[xX])?([0-9A-Fa-f]+)$/;

/** The claim key the older `hw.bus_path` + `hw.i2c_address` tags stand for. */
export function legacyClaimKey(bus: string, address: string): string {
  const text = address.replace(ASCII_SPACE_AROUND, "");
  const hex = HEX_I2C_ADDRESS.exec(text)?.[1];
  // Read as text, not as a Number: exact however many digits, leading zeros dropped.
  const addr = hex === undefined
    ? text.toLowerCase()
    : `0x${hex.replace(/^0+/, "").toLowerCase().padStart(2, "0")}`;
  // The bus path trimmed of ASCII white space, as anolis trims it (trim_copy): " /dev/i2c-1"
  // claims the same bus as "/dev/i2c-1".
  return `i2c:${bus.replace(ASCII_SPACE_AROUND, "")}:${addr}`;
}

/**
 * Most keys with two owners a claim refusal names, in key order; the rest are counted. A device's
 * claim tag may hold as many keys as a frame (some 200,000), each one a conflict: the refusal is
 * a log line, a reload's answer and a provider's start_error, so it stays bounded.
 */
export const MAX_NAMED_CLAIM_CONFLICTS = 8;
/** Most owners a claim refusal names for one key (the rest counted), each as namedDeviceHandle. */
export const MAX_NAMED_CLAIM_OWNERS = 8;

/**
 * The claim check over a set of devices: null when every key has one owner and every device's
 * tags are valid, else the message naming the first device (in the order given) whose tags are
 * invalid (`device p0/a: tags ... must be given together`: that alone, no key checked), or,
 * when all are valid, each key with its owners (`claim 'KEY' held by p0/a and p1/b`), in key
 * order: at most MAX_NAMED_CLAIM_CONFLICTS keys, each cut as providerText, and
 * MAX_NAMED_CLAIM_OWNERS owners of each, cut as namedDeviceHandle; the rest counted.
 */
export function findClaimConflict(devices: readonly DeviceCapabilities[]): string | null {
  const owners = new Map<string, string[]>();
  for (const d of devices) {
    const handle = namedDeviceHandle(d.device.providerId, d.device.deviceId);
    const c = deviceClaims(d.device.tags);
    if (c.error) return `device ${handle}: ${c.error}`;
    for (const key of c.keys) {
      const list = owners.get(key);
      if (list) list.push(handle);
      else owners.set(key, [handle]);
    }
  }
  const conflicts = [...owners].filter(([, o]) => o.length > 1).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0
  );
  if (conflicts.length === 0) return null;
  const said = conflicts.slice(0, MAX_NAMED_CLAIM_CONFLICTS).map(([key, o]) =>
    `claim '${providerText(key)}' held by ${ownersSaid(o)}`
  );
  const more = conflicts.length - said.length;
  return `Ownership validation failed; resource claim conflict: ${said.join("; ")}${
    more > 0 ? `; and ${more} more key(s) with two or more owners` : ""
  } (each ${CLAIM_TAG} key must belong to one device)`;
}

/** A key's owners (`p0/a, p0/b and p1/c`), at most MAX_NAMED_CLAIM_OWNERS named (`and N more`). */
function ownersSaid(named: readonly string[]): string {
  if (named.length > MAX_NAMED_CLAIM_OWNERS) return namedList(named, MAX_NAMED_CLAIM_OWNERS);
  return `${named.slice(0, -1).join(", ")} and ${named[named.length - 1]}`;
}

/**
 * Most devices a provider no longer lists whose claims it keeps (ProviderHost.claimDevices), the
 * most recently listed first; the claims of older ones are released. A provider's inventory is
 * bounded by MAX_DEVICES_PER_PROVIDER (adpp/client.ts): this one bounds what its restarts add
 * to it, such as a device renamed at each start.
 */
export const MAX_UNLISTED_CLAIM_DEVICES = 1024;

/**
 * The devices whose claims a provider holds once it lists `listed`: those, then each device of
 * `before` (its claim devices until now, most recent first) it no longer lists, each reduced to
 * its keys no device before it in this list claims (none left: not kept), at most
 * MAX_UNLISTED_CLAIM_DEVICES of them. `released` counts the unlisted devices dropped past that.
 */
export function heldClaimDevices(
  listed: readonly DeviceCapabilities[],
  before: readonly DeviceCapabilities[],
): { devices: DeviceCapabilities[]; released: number } {
  const ids = new Set(listed.map((d) => d.device.deviceId));
  const held = new Set(listed.flatMap((d) => deviceClaims(d.device.tags).keys));
  const devices = [...listed];
  let unlisted = 0;
  let released = 0;
  for (const d of before) {
    if (ids.has(d.device.deviceId)) continue;
    ids.add(d.device.deviceId);
    const keys = deviceClaims(d.device.tags).keys.filter((k) => !held.has(k));
    if (keys.length === 0) continue;
    if (unlisted === MAX_UNLISTED_CLAIM_DEVICES) {
      released++;
      continue;
    }
    unlisted++;
    for (const k of keys) held.add(k);
    devices.push(claimingOnly(d, keys));
  }
  return { devices, released };
}

/**
 * A device reduced to these claims (some of its keys): its info with only the tags that make them,
 * no signals or functions. The older bus tags' key may hold white space, so it keeps those tags.
 */
function claimingOnly(d: DeviceCapabilities, keys: readonly string[]): DeviceCapabilities {
  const tags = d.device.tags;
  const bus = tags[LEGACY_BUS_TAG];
  const addr = tags[LEGACY_ADDRESS_TAG];
  const legacy = bus !== undefined && addr !== undefined ? legacyClaimKey(bus, addr) : null;
  const kept: Record<string, string> = {};
  const own = keys.filter((k) => k !== legacy);
  if (own.length > 0) kept[CLAIM_TAG] = own.join(" ");
  if (legacy !== null && keys.includes(legacy)) {
    kept[LEGACY_BUS_TAG] = bus!;
    kept[LEGACY_ADDRESS_TAG] = addr!;
  }
  return { device: { ...d.device, tags: kept }, functions: [], signals: [] };
}
