/**
 * Resource claims (src/providers/claims.ts): a device's `anolis.claim` keys and the key its older
 * hw.bus_path + hw.i2c_address tags stand for; no key with two owners. And a host's WaitReady
 * host check (src/providers/host_check.ts).
 */
import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import {
  deviceClaims,
  findClaimConflict,
  heldClaimDevices,
  hostCheckOf,
  legacyClaimKey,
  MAX_HOST_REQUIREMENTS,
  MAX_NAMED_CLAIM_CONFLICTS,
  MAX_NAMED_CLAIM_OWNERS,
  MAX_UNLISTED_CLAIM_DEVICES,
} from "../../src/providers/mod.ts";
import { MAX_FRAME_BYTES } from "../../src/adpp/mod.ts";
import { PROVIDER_TEXT_CHARS, QUOTED_DEVICE_ID_CHARS } from "../../src/common/mod.ts";

function device(
  providerId: string,
  deviceId: string,
  tags: Record<string, string> = {},
): DeviceCapabilities {
  return deviceCapabilities(providerId, deviceId, { tags });
}

const bus = (path: string, addr: string) => ({ "hw.bus_path": path, "hw.i2c_address": addr });
const claim = (keys: string) => ({ "anolis.claim": keys });
const tail = " (each anolis.claim key must belong to one device)";

Deno.test("deviceClaims: the claim tag's distinct keys in order, then the key the bus tags stand for", () => {
  assert.deepEqual(deviceClaims({}), { keys: [], error: null });
  assert.deepEqual(deviceClaims(claim("  i2c:/dev/i2c-1:0x14\tgpio:17  i2c:/dev/i2c-1:0x14 ")), {
    keys: ["i2c:/dev/i2c-1:0x14", "gpio:17"],
    error: null,
  });
  assert.deepEqual(deviceClaims({ ...claim("gpio:4"), ...bus("/dev/i2c-1", "48") }), {
    keys: ["gpio:4", "i2c:/dev/i2c-1:0x48"],
    error: null,
  });
  // The same key twice (claim and bus tags agreeing) is one claim.
  assert.deepEqual(
    deviceClaims({ ...claim("i2c:/dev/i2c-1:0x48"), ...bus("/dev/i2c-1", "0x48") }),
    {
      keys: ["i2c:/dev/i2c-1:0x48"],
      error: null,
    },
  );
  assert.deepEqual(deviceClaims({ "hw.bus_path": "/dev/i2c-1" }), {
    keys: [],
    error: "tags hw.bus_path and hw.i2c_address must be given together",
  });
});

Deno.test("deviceClaims splits the claim tag on ASCII white space only, as the anolis SDK: a no-break space is part of a key", () => {
  // The anolis provider SDK tokenises the tag with `istringstream >>` and refuses only C-locale
  // white space in a key: "i2c:/dev/i2c-1:0x61\u00a0spare" is one key there.
  for (const sep of ["\u00a0", "\u2028", "\u3000", "\ufeff", "\u2003"]) {
    const key = `i2c:/dev/i2c-1:0x61${sep}spare`;
    assert.deepEqual(deviceClaims(claim(`${key} gpio:5`)), { keys: [key, "gpio:5"], error: null });
    assert.equal(
      findClaimConflict([
        device("p0", "a", claim(key)),
        device("p1", "b", claim("i2c:/dev/i2c-1:0x61 spare")),
      ]),
      null,
      JSON.stringify(sep),
    );
  }
  assert.deepEqual(deviceClaims(claim("a\vb\fc\rd\ne\tf g")).keys, [
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
  ]);
});

Deno.test("legacyClaimKey: the I2C claim key, two lower-case hex digits, the address read as hex as anolis reads it; other text lower-cased", () => {
  // anolis (core/runtime/ownership_validation.cpp parse_i2c_address) reads the address as hex,
  // `0x` or not: `48` is 0x48 (as i2cdetect prints it), not decimal 48 (0x30).
  for (const a of ["0x48", "48", "0X48", " 0x48 ", "0x048"]) {
    assert.equal(legacyClaimKey("/dev/i2c-1", a), "i2c:/dev/i2c-1:0x48", a);
  }
  for (const a of ["4A", "0x4a", "0X4A", "004a"]) {
    assert.equal(legacyClaimKey("/dev/i2c-1", a), "i2c:/dev/i2c-1:0x4a", a);
  }
  assert.equal(legacyClaimKey("/dev/i2c-1", "8"), "i2c:/dev/i2c-1:0x08");
  // The bus path trimmed of ASCII white space, as anolis trims it; other space is part of it.
  assert.equal(legacyClaimKey(" /dev/i2c-1\t", "8"), "i2c:/dev/i2c-1:0x08");
  assert.equal(legacyClaimKey("\u00a0/dev/i2c-1", "8"), "i2c:\u00a0/dev/i2c-1:0x08");
  assert.equal(legacyClaimKey("/dev/i2c-1", "0"), "i2c:/dev/i2c-1:0x00");
  assert.equal(legacyClaimKey("/dev/i2c-1", "97"), "i2c:/dev/i2c-1:0x97");
  // Exact however long (no Number rounding), and no other notation read as a number.
  assert.equal(legacyClaimKey("/dev/i2c-1", "0x20000000000001"), "i2c:/dev/i2c-1:0x20000000000001");
  assert.equal(legacyClaimKey("/dev/i2c-1", "0o17"), "i2c:/dev/i2c-1:0o17");
  assert.equal(legacyClaimKey("/dev/i2c-1", "1e2"), "i2c:/dev/i2c-1:0x1e2");
  assert.equal(legacyClaimKey("/dev/i2c-1", "-1"), "i2c:/dev/i2c-1:-1");
  assert.equal(legacyClaimKey("spi0", " CS-A "), "i2c:spi0:cs-a");
  assert.equal(legacyClaimKey("/dev/i2c-1", ""), "i2c:/dev/i2c-1:");
});

Deno.test("findClaimConflict: devices without claims, or with distinct keys, do not conflict", () => {
  assert.equal(findClaimConflict([]), null);
  assert.equal(
    findClaimConflict([
      device("p0", "a"),
      device("p0", "b", { other: "tag" }),
      device("p0", "c", claim("i2c:/dev/i2c-1:0x48")),
      device("p1", "d", claim("i2c:/dev/i2c-1:0x49")),
      device("p1", "e", bus("/dev/i2c-2", "0x48")),
      device("p1", "f", claim("i2c:/dev/i2c-1:0x14  i2c:/dev/i2c-1:0x14")),
    ]),
    null,
  );
});

Deno.test("findClaimConflict names the key and both owners, across and within providers", () => {
  assert.equal(
    findClaimConflict([
      device("bread", "dcmt_0", claim("i2c:/dev/i2c-1:0x61")),
      device("ezo", "do_0", claim("i2c:/dev/i2c-1:0x61")),
    ]),
    `Ownership validation failed; resource claim conflict: claim 'i2c:/dev/i2c-1:0x61' held by bread/dcmt_0 and ezo/do_0${tail}`,
  );
  assert.equal(
    findClaimConflict([
      device("p0", "a", claim("gpio:17")),
      device("p0", "b", claim("gpio:17")),
      device("p1", "c", claim("gpio:17")),
    ]),
    `Ownership validation failed; resource claim conflict: claim 'gpio:17' held by p0/a, p0/b and p1/c${tail}`,
  );
});

Deno.test("findClaimConflict checks every key of a multi-key claim, each conflict in key order", () => {
  assert.equal(
    findClaimConflict([
      device("bread", "dcmt_0", claim("i2c:/dev/i2c-1:0x14 gpio:17 uart:/dev/ttyS0")),
      device("other", "relay_0", claim("uart:/dev/ttyS0 gpio:17")),
    ]),
    "Ownership validation failed; resource claim conflict: claim 'gpio:17' held by bread/dcmt_0 and other/relay_0; " +
      `claim 'uart:/dev/ttyS0' held by bread/dcmt_0 and other/relay_0${tail}`,
  );
});

Deno.test("findClaimConflict compares keys as exact strings", () => {
  assert.equal(
    findClaimConflict([
      device("bread", "dcmt_0", claim("i2c:/dev/i2c-1:0x61")),
      device("ezo", "do_0", claim("i2c:/dev/i2c-1:0X61")),
    ]),
    null,
  );
});

Deno.test("findClaimConflict: the older bus tags collide with each other and with the claim for that address", () => {
  for (const [a, b] of [["0x48", "48"], ["0X48", " 0x48 "], ["0x4A", "0x4a"]]) {
    assert.equal(
      findClaimConflict([
        device("p0", "free", bus("/dev/i2c-1", "0x10")),
        device("p0", "first", bus("/dev/i2c-1", a!)),
        device("p1", "second", bus("/dev/i2c-1", b!)),
      ]),
      `Ownership validation failed; resource claim conflict: claim 'i2c:/dev/i2c-1:0x${
        Number(a!.trim()).toString(16)
      }' held by p0/first and p1/second${tail}`,
      `${a} vs ${b}`,
    );
  }
  assert.equal(
    findClaimConflict([
      device("old_bread", "dcmt_0", bus("/dev/i2c-1", "0x61")),
      device("ezo", "do_0", claim("i2c:/dev/i2c-1:0x61")),
    ]),
    `Ownership validation failed; resource claim conflict: claim 'i2c:/dev/i2c-1:0x61' held by old_bread/dcmt_0 and ezo/do_0${tail}`,
  );
  // An address without `0x` is hex, as anolis reads it: `61` collides with 0x61 -- and decimal
  // 97, which anolis reads as 0x97, does not.
  assert.equal(
    findClaimConflict([
      device("old_bread", "dcmt_0", bus("/dev/i2c-1", "61")),
      device("ezo", "do_0", claim("i2c:/dev/i2c-1:0x61")),
    ]),
    `Ownership validation failed; resource claim conflict: claim 'i2c:/dev/i2c-1:0x61' held by old_bread/dcmt_0 and ezo/do_0${tail}`,
  );
  assert.equal(
    findClaimConflict([
      device("old_bread", "dcmt_0", bus("/dev/i2c-1", "97")),
      device("ezo", "do_0", claim("i2c:/dev/i2c-1:0x61")),
    ]),
    null,
  );
});

/** A claim tag of distinct keys as long as one frame allows (base-36 numbers: some 200,000). */
function frameOfKeys(): { tag: string; count: number } {
  const keys: string[] = [];
  let length = 0;
  for (let i = 0; length < MAX_FRAME_BYTES - 64; i++) {
    const k = i.toString(36);
    keys.push(k);
    length += k.length + 1;
  }
  return { tag: keys.join(" "), count: keys.length };
}

Deno.test("deviceClaims and findClaimConflict read a claim tag as long as a frame: each key once", () => {
  // The tag is the provider's: some 200,000 keys fit one DescribeDevice answer. Each admission and
  // each GET /v0/providers/health reads every device's claims on the event loop; a dedupe by
  // scanning the keys read so far took about 30 s for this one tag (quadratic), linear takes
  // some 50 ms (measured by hand; speed is never asserted in tests).
  const { tag, count } = frameOfKeys();
  const keys = deviceClaims(claim(`${tag} ${tag}`)).keys; // each key twice: one kept
  const conflict = findClaimConflict([
    device("p0", "a", claim(tag)),
    device("p1", "b", claim("0")),
  ]);
  assert.equal(keys.length, count);
  assert.equal(
    conflict,
    `Ownership validation failed; resource claim conflict: claim '0' held by p0/a and p1/b${tail}`,
  );
});

Deno.test("findClaimConflict names at most MAX_NAMED_CLAIM_CONFLICTS keys and MAX_NAMED_CLAIM_OWNERS owners, each cut", () => {
  // Two devices claiming the same frame of keys: each key a conflict, one refusal (a log line,
  // a reload's answer, a start_error) naming a few, the rest counted -- not megabytes of them.
  const { tag, count } = frameOfKeys();
  const two = findClaimConflict([device("p0", "a", claim(tag)), device("p1", "b", claim(tag))])!;
  const named = two.match(/claim '/g)!.length;
  assert.equal(named, MAX_NAMED_CLAIM_CONFLICTS);
  assert.ok(
    two.endsWith(
      `; and ${count - MAX_NAMED_CLAIM_CONFLICTS} more key(s) with two or more owners${tail}`,
    ),
    two,
  );
  assert.ok(two.length < 1000, `${two.length} characters`);
  // A long key and long device ids are cut (marked with an ellipsis); many owners are counted.
  const longKey = `gpio:${"9".repeat(5000)}`;
  const longId = "d".repeat(5000);
  const many = Array.from(
    { length: MAX_NAMED_CLAIM_OWNERS + 3 },
    (_, i) => device("p0", `${longId}${i}`, claim(longKey)),
  );
  const cut = findClaimConflict(many)!;
  const shownKey = `${longKey.slice(0, PROVIDER_TEXT_CHARS)}\u2026`;
  const shownId = `p0/${longId.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
  assert.equal(
    cut,
    `Ownership validation failed; resource claim conflict: claim '${shownKey}' held by ${
      Array(MAX_NAMED_CLAIM_OWNERS).fill(shownId).join(", ")
    } and 3 more${tail}`,
  );
});

Deno.test("findClaimConflict refuses a bus path without an address and an address without a bus", () => {
  assert.equal(
    findClaimConflict([device("p0", "ok"), device("p0", "half", { "hw.bus_path": "/dev/i2c-1" })]),
    "device p0/half: tags hw.bus_path and hw.i2c_address must be given together",
  );
  assert.equal(
    findClaimConflict([device("p1", "half", { "hw.i2c_address": "0x48" })]),
    "device p1/half: tags hw.bus_path and hw.i2c_address must be given together",
  );
});

Deno.test("hostCheckOf: nothing reported, ok, and unmet read from the host_unmet summary", () => {
  assert.equal(hostCheckOf(null), null);
  assert.equal(hostCheckOf({ init_time_ms: "3" }), null);
  assert.deepEqual(hostCheckOf({ host_check: "ok" }), { status: "ok", summary: "", unmet: [] });
  assert.deepEqual(
    hostCheckOf({
      host_check: "unmet",
      host_unmet: "i2c.bus_present: /dev/i2c-9 does not exist; i2c.bus_access",
    }),
    {
      status: "unmet",
      summary: "i2c.bus_present: /dev/i2c-9 does not exist; i2c.bus_access",
      unmet: [
        { id: "i2c.bus_present", detail: "/dev/i2c-9 does not exist", remedy: "" },
        { id: "i2c.bus_access", detail: "", remedy: "" },
      ],
    },
  );
  // host_unmet alone says unmet; host_check unmet without a summary lists nothing.
  assert.equal(hostCheckOf({ host_unmet: "x: y" })?.status, "unmet");
  assert.deepEqual(hostCheckOf({ host_check: "UNMET" }), {
    status: "unmet",
    summary: "",
    unmet: [],
  });
});

Deno.test("hostCheckOf: host_requirements (the --check-host envelope or its array) gives the remedies", () => {
  const requirements = [
    { id: "i2c.bus_present", status: "met", detail: "/dev/i2c-1 exists" },
    {
      id: "i2c.bus_access",
      status: "unmet",
      detail: "anolis cannot open /dev/i2c-1 read-write",
      remedy: "add anolis to group 'i2c'",
    },
    { id: "i2c.clock", status: "unknown" },
    { id: "", status: "unmet" },
    { status: "unmet" },
  ];
  const want = {
    status: "unmet",
    summary: "i2c.bus_access: anolis cannot open /dev/i2c-1 read-write",
    unmet: [{
      id: "i2c.bus_access",
      detail: "anolis cannot open /dev/i2c-1 read-write",
      remedy: "add anolis to group 'i2c'",
    }],
  };
  const base = { host_check: "unmet", host_unmet: want.summary };
  assert.deepEqual(
    hostCheckOf({
      ...base,
      host_requirements: JSON.stringify({ check_host_version: 1, requirements }),
    }),
    want,
  );
  assert.deepEqual(hostCheckOf({ ...base, host_requirements: JSON.stringify(requirements) }), want);
  // Not JSON, or not of that shape: the summary is read instead.
  for (const bad of ["{not json", "42", '{"requirements": 1}']) {
    assert.deepEqual(hostCheckOf({ ...base, host_requirements: bad })?.unmet, [
      { id: "i2c.bus_access", detail: "anolis cannot open /dev/i2c-1 read-write", remedy: "" },
    ]);
  }
});

Deno.test("hostCheckOf keeps at most MAX_HOST_REQUIREMENTS, each text cut", () => {
  const many = Array.from({ length: 40 }, (_, i) => `r${i}: ${"x".repeat(400)}`).join("; ");
  const c = hostCheckOf({ host_check: "unmet", host_unmet: many })!;
  assert.equal(c.unmet.length, MAX_HOST_REQUIREMENTS);
  assert.equal(c.unmet[0]!.detail.length, 301);
  assert.ok(c.summary.endsWith("\u2026"));
  assert.equal(c.summary.length, 1001);
});

/** Each device as `id: its claim keys`. */
const held = (devices: readonly DeviceCapabilities[]) =>
  devices.map((d) => `${d.device.deviceId}: ${deviceClaims(d.device.tags).keys.join(" ")}`);

Deno.test("heldClaimDevices: the listed devices, then each unlisted one with the keys no device before it claims", () => {
  const before = [
    device("p0", "a", claim("k1 k2")),
    device("p0", "b", { ...claim("k3"), ...bus("/dev/my bus", "0x61") }),
    device("p0", "c", claim("k4")),
    device("p0", "old", claim("k1")),
    device("p0", "plain"),
  ];
  // a is listed again (its latest description counts: k1 left it), d took k2, c took no key.
  const listed = [device("p0", "a", claim("k1")), device("p0", "d", claim("k2 k4"))];
  const out = heldClaimDevices(listed, before);
  assert.equal(out.released, 0);
  assert.deepEqual(held(out.devices), ["a: k1", "d: k2 k4", "b: k3 i2c:/dev/my bus:0x61"]);
  assert.equal(out.devices[0], listed[0]);
  // An unlisted device keeps its info, with only the tags of the keys it still holds.
  assert.deepEqual(out.devices[2]!.device.tags, {
    "anolis.claim": "k3",
    "hw.bus_path": "/dev/my bus",
    "hw.i2c_address": "0x61",
  });
  assert.equal(findClaimConflict(out.devices), null);
  // A device renamed (same key, new id) is one owner, not two.
  const renamed = heldClaimDevices([device("p0", "a2", claim("k1"))], out.devices);
  assert.deepEqual(held(renamed.devices), ["a2: k1", "d: k2 k4", "b: k3 i2c:/dev/my bus:0x61"]);
  assert.equal(findClaimConflict(renamed.devices), null);
  // Nothing listed (its host unmet): every device keeps its claims.
  assert.deepEqual(held(heldClaimDevices([], renamed.devices).devices), held(renamed.devices));
});

Deno.test("heldClaimDevices keeps at most MAX_UNLISTED_CLAIM_DEVICES unlisted devices, the most recent first", () => {
  const many = Array.from(
    { length: MAX_UNLISTED_CLAIM_DEVICES + 3 },
    (_, i) => device("p0", `d${i}`, claim(`k${i}`)),
  );
  const out = heldClaimDevices([device("p0", "new", claim("n"))], many);
  assert.equal(out.released, 3);
  assert.equal(out.devices.length, 1 + MAX_UNLISTED_CLAIM_DEVICES);
  assert.equal(out.devices.at(-1)!.device.deviceId, `d${MAX_UNLISTED_CLAIM_DEVICES - 1}`);
});
