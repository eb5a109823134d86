/** The declared FunctionPolicy checks (src/control/call_policy.ts) on their own. */
import assert from "node:assert/strict";
import {
  allowedModesRefusal,
  CallIntervals,
  leaseRefusal,
  MAX_CALL_INTERVAL_ENTRIES,
  MAX_NAMED_ALLOWED_MODES,
} from "../../src/control/mod.ts";
import {
  type DeviceCapabilities,
  type FunctionPolicy,
  type FunctionSpec,
  NO_FUNCTION_POLICY,
} from "../../src/common/mod.ts";

const device: DeviceCapabilities = {
  device: {
    providerId: "p",
    deviceId: "d",
    providerName: "p",
    typeId: "t",
    typeVersion: "1",
    label: "",
    address: "",
    tags: {},
  },
  functions: [],
  signals: [],
};

function fn(policy: Partial<FunctionPolicy>, functionId = 1): FunctionSpec {
  return {
    functionId,
    name: `f${functionId}`,
    description: "",
    category: "ACTUATE",
    actuating: true,
    args: [],
    policy: { ...NO_FUNCTION_POLICY, ...policy },
  };
}

Deno.test("allowedModesRefusal: empty allows every mode; names compare case-insensitively", () => {
  for (const mode of ["IDLE", "MANUAL", "AUTO", "FAULT"]) {
    assert.equal(allowedModesRefusal(device, fn({}), mode), null);
  }
  const manual = fn({ allowedModes: ["manual", "Auto"] });
  assert.equal(allowedModesRefusal(device, manual, "MANUAL"), null);
  assert.equal(allowedModesRefusal(device, manual, "AUTO"), null);
  const refused = allowedModesRefusal(device, manual, "IDLE");
  assert.equal(refused?.code, "FAILED_PRECONDITION");
  assert.equal(
    refused?.message,
    String
      .raw`Call refused in IDLE mode: "p/d" "f1" is allowed only in "manual", "Auto" (provider policy allowed_modes)`,
  );
  // A name that is no runtime mode matches none.
  assert.equal(
    allowedModesRefusal(device, fn({ allowedModes: ["SAFE"] }), "FAULT")?.code,
    "FAILED_PRECONDITION",
  );
  // A spec without a policy (built by hand) restricts nothing.
  const { policy: _, ...bare } = fn({ allowedModes: ["AUTO"], requiresLease: true });
  assert.equal(allowedModesRefusal(device, bare, "IDLE"), null);
  assert.equal(leaseRefusal(device, bare), null);
});

Deno.test("leaseRefusal refuses every call to a function that requires a lease", () => {
  assert.equal(leaseRefusal(device, fn({})), null);
  assert.equal(leaseRefusal(device, fn({ requiresLease: true }))?.code, "FAILED_PRECONDITION");
});

Deno.test("CallIntervals refuses until min_interval_ms has passed since the last sent call", () => {
  const iv = new CallIntervals();
  const f = fn({ minIntervalMs: 1000 });
  assert.equal(iv.refusal(device, f, 0), null, "never sent");
  iv.note(device, f, 10_000);
  const r = iv.refusal(device, f, 10_250);
  assert.equal(r?.code, "RESOURCE_EXHAUSTED");
  assert.deepEqual(r?.details, { retry_after_ms: 750 });
  assert.equal(
    r?.message,
    String
      .raw`Call refused: "p/d" "f1" was last called 250 ms ago and its provider policy min_interval_ms is 1000 ms (retry in 750 ms)`,
  );
  assert.equal(iv.refusal(device, f, 10_999)?.code, "RESOURCE_EXHAUSTED");
  assert.equal(iv.refusal(device, f, 11_000), null, "exactly the interval later");
  // Another function, or one without an interval, is not affected.
  assert.equal(iv.refusal(device, fn({ minIntervalMs: 1000 }, 2), 10_250), null);
  // One without an interval is remembered (a restart may declare one), and refuses nothing.
  iv.note(device, fn({}, 3), 10_000);
  assert.equal(iv.size, 2);
  assert.equal(iv.refusal(device, fn({}, 3), 10_250), null);
  assert.equal(
    iv.refusal(device, fn({ minIntervalMs: 1000 }, 3), 10_250)?.code,
    "RESOURCE_EXHAUSTED",
    "the interval its next process declares counts from that send",
  );
});

Deno.test("CallIntervals stays bounded: past the bound, entries whose interval ran out are dropped", () => {
  const iv = new CallIntervals();
  for (let i = 1; i <= MAX_CALL_INTERVAL_ENTRIES; i++) {
    iv.note(device, fn({ minIntervalMs: 10 }, i), 0);
  }
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES);
  const fresh = fn({ minIntervalMs: 10 }, MAX_CALL_INTERVAL_ENTRIES + 1);
  iv.note(device, fresh, 100); // every earlier entry has run out by now
  assert.equal(iv.size, 1);
  assert.equal(iv.refusal(device, fresh, 105)?.code, "RESOURCE_EXHAUSTED");
  // Past the bound, a function without an interval is dropped at once.
  for (let i = 1; i < MAX_CALL_INTERVAL_ENTRIES; i++) iv.note(device, fn({}, 10_000 + i), 106);
  iv.note(device, fn({}, 20_000), 106);
  assert.equal(iv.size, 1, "only the entry within its interval stays");
});

Deno.test("CallIntervals past the bound prunes in work linear in its entries, not entries x functions declared", () => {
  // Four devices declaring 1024 functions each, every one called within its 10 s interval: the
  // table is full of entries it must keep, so every further sent call prunes it. Each entry is
  // judged by what its function declares now; looking that up by searching the device's
  // functions read some 2 million of them per call (a call past the bound took ~20 ms of the
  // event loop, more as the table grows). Counted here as reads of the declared functions.
  const PER_DEVICE = 1024;
  let reads = 0;
  const counted = (list: FunctionSpec[]) =>
    new Proxy(list, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });
  const devices = Array.from({ length: 4 }, (_, i): DeviceCapabilities => ({
    ...device,
    device: { ...device.device, deviceId: `d${i}` },
    functions: counted(
      Array.from({ length: PER_DEVICE }, (_, f) => fn({ minIntervalMs: 10_000 }, f + 1)),
    ),
  }));
  const iv = new CallIntervals({
    currentDevice: (_p, d) => devices.find((x) => x.device.deviceId === d),
  });
  for (const d of devices) for (const f of d.functions.slice()) iv.note(d, f, 0);
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES);
  reads = 0;
  const later = { ...device, device: { ...device.device, deviceId: "later" } };
  for (let i = 1; i <= 8; i++) iv.note(later, fn({ minIntervalMs: 10_000 }, i), 100);
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES + 8, "every entry within its interval stays");
  // Each declared function read about once in all (its device's functions by name), not per call.
  assert.ok(reads <= 2 * 4 * PER_DEVICE, `${reads} reads of declared functions for 8 calls`);
});

Deno.test("CallIntervals.unnote does not put back a note the bound dropped meanwhile: the table stays within MAX_CALL_INTERVAL_ENTRIES", () => {
  const iv = new CallIntervals();
  const plain = fn({}, 1); // no interval: past the bound its note is dropped at once
  iv.note(device, plain, 0);
  for (let i = 2; i <= MAX_CALL_INTERVAL_ENTRIES; i++) {
    iv.note(device, fn({ minIntervalMs: 10_000 }, i), 0);
  }
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES);
  const noted = iv.note(device, plain, 50); // its call is sent...
  // ...meanwhile another provider's call takes the table past its bound: the note of `plain`,
  // its interval run out, is dropped.
  const other = { ...device, device: { ...device.device, providerId: "q" } };
  iv.note(other, fn({ minIntervalMs: 10_000 }, 1), 60);
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES);
  // ...and the call of `plain` was never written after all: its note is taken back.
  iv.unnote(device, plain, noted);
  assert.equal(iv.size, MAX_CALL_INTERVAL_ENTRIES, "not one over the bound");
  assert.equal(iv.refusal(device, fn({ minIntervalMs: 10 }, 1), 70), null);
});

Deno.test("CallIntervals.unnote does not take back a later send of the function: a call never written after all leaves the last send noted since in force", () => {
  const iv = new CallIntervals();
  const f = fn({ minIntervalMs: 1000 });
  // A call to the provider's process is noted as sent; its write hangs (a process gone deaf)...
  const noted = iv.note(device, f, 0);
  // ...a reload replaces the provider: its new process, under a lock of its own (the router's
  // lock goes with the host it removes), is sent a call once the interval has passed...
  assert.equal(iv.refusal(device, f, 1500), null);
  iv.note(device, f, 1500);
  // ...and the old process's write fails: that call was never written after all.
  iv.unnote(device, f, noted);
  assert.equal(
    iv.refusal(device, f, 1600)?.code,
    "RESOURCE_EXHAUSTED",
    "the send at 1500 is still the last one: a call 100 ms after it is too soon",
  );
});

Deno.test("CallIntervals follows a function by name: a provider restart that renumbers functions keeps each one's interval", () => {
  const iv = new CallIntervals();
  const spec = (name: string, functionId: number): FunctionSpec => ({
    ...fn({ minIntervalMs: 1000 }, functionId),
    name,
  });
  iv.note(device, spec("set_x", 1), 10_000);
  // After the restart set_x is function 2 and function 1 is another one.
  assert.equal(
    iv.refusal(device, spec("set_x", 2), 10_250)?.code,
    "RESOURCE_EXHAUSTED",
    "set_x renumbered: its waiting interval was lost",
  );
  assert.equal(
    iv.refusal(device, spec("calibrate", 1), 10_250),
    null,
    "set_x's interval moved onto the function now numbered 1",
  );
});

Deno.test("CallIntervals past the bound judges each entry by the interval its function declares now, not the one declared when it was sent", () => {
  // The inventory: p/d declares `f1` now with a 10 s interval (its previous process declared none).
  let declared: DeviceCapabilities = device;
  const iv = new CallIntervals({
    currentDevice: (p, d) => p === "p" && d === "d" ? declared : undefined,
  });
  iv.note(device, fn({}, 1), 0); // sent when f1 declared no interval
  declared = { ...device, functions: [fn({ minIntervalMs: 10_000 }, 1)] };
  // Other providers' functions take the table past its bound at 100 ms.
  for (let i = 1; i <= MAX_CALL_INTERVAL_ENTRIES; i++) {
    const other = { ...device, device: { ...device.device, providerId: "q" } };
    iv.note(other, fn({}, i), 100); // no interval: dropped at once past the bound
  }
  assert.equal(iv.size, 1, "only f1 stays");
  assert.equal(
    iv.refusal(device, fn({ minIntervalMs: 10_000 }, 1), 200)?.code,
    "RESOURCE_EXHAUSTED",
    "f1's send at 0 is kept: the 10 s it declares now have not passed",
  );
  // And the other way: an interval declared shorter now lets its entry go once that has passed.
  const iv2 = new CallIntervals({
    currentDevice: (p, d) => p === "p" && d === "d" ? declared : undefined,
  });
  declared = { ...device, functions: [fn({}, 1)] };
  iv2.note(device, fn({ minIntervalMs: 10_000 }, 1), 0); // sent when f1 declared 10 s
  declared = { ...device, functions: [fn({ minIntervalMs: 50 }, 1)] };
  for (let i = 1; i <= MAX_CALL_INTERVAL_ENTRIES; i++) {
    const other = { ...device, device: { ...device.device, providerId: "q" } };
    iv2.note(other, fn({ minIntervalMs: 10_000 }, i), 100);
  }
  assert.equal(iv2.size, MAX_CALL_INTERVAL_ENTRIES, "f1 dropped: its 50 ms have passed");
  assert.equal(iv2.refusal(device, fn({ minIntervalMs: 10_000 }, 1), 200), null);
});

Deno.test("CallIntervals keeps functions apart whatever characters their ids and names hold: no two are one entry", () => {
  const iv = new CallIntervals();
  const at = (providerId: string, deviceId: string): DeviceCapabilities => ({
    ...device,
    device: { ...device.device, providerId, deviceId },
  });
  const named = (name: string): FunctionSpec => ({ ...fn({ minIntervalMs: 1000 }), name });
  // A name holding NUL against a device id holding NUL; a provider id holding "/" against a
  // device id holding "/": each pair would make the same joined text.
  iv.note(at("p", "d"), named("a\u0000b"), 0);
  assert.equal(iv.refusal(at("p", "d\u0000a"), named("b"), 10), null, "p/d\\0a b never sent");
  iv.note(at("p/d", "x"), named("f"), 0);
  assert.equal(iv.refusal(at("p", "d/x"), named("f"), 10), null, "p d/x f never sent");
  assert.equal(iv.size, 2);
  assert.equal(iv.refusal(at("p", "d"), named("a\u0000b"), 10)?.code, "RESOURCE_EXHAUSTED");
  assert.equal(iv.refusal(at("p/d", "x"), named("f"), 10)?.code, "RESOURCE_EXHAUSTED");
});

Deno.test("call refusals quote the provider's names: a line break, a quote or 10 KB in a device id, function name or mode name can neither forge nor flood the message", () => {
  const odd: DeviceCapabilities = {
    ...device,
    device: { ...device.device, deviceId: 'd"\nWARN forged' },
  };
  const name = `f\r\u001b[31m${"x".repeat(10_000)}`;
  const spec = (policy: Partial<FunctionPolicy>): FunctionSpec => ({ ...fn(policy), name });
  const modes = allowedModesRefusal(odd, spec({ allowedModes: ["AUTO\nX"] }), "IDLE");
  const lease = leaseRefusal(odd, spec({ requiresLease: true }));
  const iv = new CallIntervals();
  iv.note(odd, spec({ minIntervalMs: 1000 }), 0);
  const interval = iv.refusal(odd, spec({ minIntervalMs: 1000 }), 250);
  for (const refused of [modes, lease, interval]) {
    const message = refused?.message ?? "";
    assert.doesNotMatch(message, /\p{Cc}/u, JSON.stringify(message.slice(0, 120)));
    assert.ok(message.length < 400, `${message.length} characters`);
    assert.ok(message.includes(String.raw`"p/d\"\nWARN forged"`), message.slice(0, 120));
  }
  assert.equal(
    modes?.message,
    String.raw`Call refused in IDLE mode: "p/d\"\nWARN forged" "f\r\u001b[31m` + "x".repeat(73) +
      String.raw`…" is allowed only in "AUTO\nX" (provider policy allowed_modes)`,
  );
});

Deno.test("allowedModesRefusal names at most MAX_NAMED_ALLOWED_MODES of a long allowed_modes and counts the rest", () => {
  const long = Array.from({ length: 10_000 }, (_, i) => `M${i}`);
  const refused = allowedModesRefusal(device, fn({ allowedModes: long }), "IDLE");
  assert.equal(refused?.code, "FAILED_PRECONDITION");
  const named = long.slice(0, MAX_NAMED_ALLOWED_MODES).map((m) => `"${m}"`).join(", ");
  assert.equal(
    refused?.message,
    `Call refused in IDLE mode: "p/d" "f1" is allowed only in ${named} and ${
      10_000 - MAX_NAMED_ALLOWED_MODES
    } more (provider policy allowed_modes)`,
  );
  // The exact bound: that many are all named, no count.
  const atBound = long.slice(0, MAX_NAMED_ALLOWED_MODES);
  assert.equal(
    allowedModesRefusal(device, fn({ allowedModes: atBound }), "IDLE")?.message,
    `Call refused in IDLE mode: "p/d" "f1" is allowed only in ${named} (provider policy allowed_modes)`,
  );
  // One past it: the last is counted.
  const past = long.slice(0, MAX_NAMED_ALLOWED_MODES + 1);
  assert.match(
    allowedModesRefusal(device, fn({ allowedModes: past }), "IDLE")?.message ?? "",
    / and 1 more \(provider policy allowed_modes\)$/,
  );
});
