/**
 * CallRouter against the plant provider (tests/helpers/fake_provider.ts plantDevice, device
 * plant0) served in-process (tests/helpers/rig.ts):
 * what a call answers, the selector rules, the per-provider FIFO lock with its queue bound, a
 * queued call's cancellation, the drain barrier and the availability check.
 */
import assert from "node:assert/strict";
import {
  PROVIDER_TEXT_CHARS,
  QUOTED_DEVICE_ID_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  RuntimeError,
} from "../../src/common/mod.ts";
import { MAX_QUEUED_CALLS_PER_PROVIDER } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { b, d, i, manualCall, plantProvider, readSignal } from "../safety/_fixture.ts";

const SET_HEATER = 1;
const SET_FAN = 2;
const READ_STATUS = 3;

async function withPlant(
  body: (rt: Kernel, r: Rig) => Promise<void>,
  o: { arm?: boolean } = {},
): Promise<void> {
  await using r = await rig({ providers: [plantProvider("plant")], arm: o.arm ?? true });
  await body(r.kernel, r);
}

/** `p`, or a rejection naming the bound when it has not settled within `ms`. */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function rejectsWith(code: string, message: string) {
  return (e: unknown) => {
    assert.ok(e instanceof RuntimeError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.message, message);
    return true;
  };
}

Deno.test("CallRouter answers with the call's identity and the provider's results, then polls", async () => {
  await withPlant(async (rt) => {
    const first = await rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: READ_STATUS,
      args: {},
      origin: "manual",
    });
    // `unset` (a result without a value) is dropped.
    assert.deepEqual(first, {
      providerId: "plant",
      deviceId: "plant0",
      functionId: READ_STATUS,
      functionName: "read_status",
      results: { reads: i(1), fan_duty: d(0) },
      postCallPollTriggered: true,
    });
    // The post-call poll ran before the answer: the cache already holds the new count.
    assert.deepEqual(rt.cache.signal("plant", "plant0", "status_reads")?.value, i(1));

    const fan = await rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionName: "set_fan",
      args: { duty: d(0.4) },
      origin: "manual",
    });
    assert.deepEqual(fan, {
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      functionName: "set_fan",
      results: {},
      postCallPollTriggered: true,
    });
    assert.deepEqual(rt.cache.signal("plant", "plant0", "fan_duty")?.value, d(0.4));
  });
});

Deno.test("CallRouter accepts a function_id with its own name and resolves by id or by name", async () => {
  await withPlant(async (rt) => {
    const r = await rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      functionName: "set_fan",
      args: { duty: d(0.2) },
      origin: "manual",
    });
    assert.equal(r.functionId, SET_FAN);
    assert.deepEqual(
      rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionId: 1 })
        .fn.name,
      "set_heater",
    );
    assert.deepEqual(
      rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionName: "set_heater" }).fn
        .functionId,
      SET_HEATER,
    );
    assert.throws(
      () => rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionName: "" }),
      rejectsWith("INVALID_ARGUMENT", "missing function selector: function_id must not be 0"),
    );
    assert.throws(
      () =>
        rt.router.resolve({
          providerId: "plant",
          deviceId: "plant0",
          functionId: 2,
          functionName: "set_heater",
        }),
      rejectsWith(
        "INVALID_ARGUMENT",
        'function_id 2 is "set_fan", not "set_heater" (plant/plant0)',
      ),
    );
    assert.throws(
      () => rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionId: 9 }),
      rejectsWith("NOT_FOUND", "Function not found: plant/plant0 function_id 9"),
    );
    assert.throws(
      () => rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionName: "fly" }),
      rejectsWith("NOT_FOUND", 'Function not found: plant/plant0 "fly"'),
    );
    assert.throws(
      () => rt.router.resolve({ providerId: "plant", deviceId: "plant9", functionId: 1 }),
      rejectsWith("NOT_FOUND", "Device not found: plant/plant9"),
    );
    assert.throws(
      () => rt.router.resolve({ providerId: "nope", deviceId: "plant0", functionId: 1 }),
      rejectsWith("NOT_FOUND", "Provider not found: nope"),
    );
  });
});

Deno.test("CallRouter: a provider id or device id of 10 kB is cut (QUOTED_PROVIDER_ID_CHARS, QUOTED_DEVICE_ID_CHARS) in the NOT_FOUND messages", async () => {
  await withPlant((rt) => {
    const message = (providerId: string, deviceId: string, functionId = 1) => {
      try {
        rt.router.resolve({ providerId, deviceId, functionId });
      } catch (e) {
        assert.ok(e instanceof RuntimeError, String(e));
        assert.equal(e.code, "NOT_FOUND");
        return e.message;
      }
      throw new Error(`${providerId.length}/${deviceId.length} chars resolved`);
    };
    const p = "p".repeat(QUOTED_PROVIDER_ID_CHARS);
    const dev = "d".repeat(QUOTED_DEVICE_ID_CHARS);
    assert.equal(message("p".repeat(10_000), "plant0"), `Provider not found: ${p}\u2026`);
    // Exactly the bound: whole; one past it: cut, with an ellipsis.
    assert.equal(message(p, "plant0"), `Provider not found: ${p}`);
    assert.equal(message(`${p}x`, "plant0"), `Provider not found: ${p}\u2026`);
    assert.equal(message("plant", "d".repeat(10_000)), `Device not found: plant/${dev}\u2026`);
    assert.equal(message("plant", dev), `Device not found: plant/${dev}`);
    assert.equal(message("plant", `${dev}x`), `Device not found: plant/${dev}\u2026`);
    return Promise.resolve();
  });
});

Deno.test("CallRouter: an unknown function name of 10 kB or with control characters is cut to PROVIDER_TEXT_CHARS and quoted in the NOT_FOUND message", async () => {
  await withPlant((rt) => {
    const notFoundMessage = (functionName: string) => {
      try {
        rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionName });
      } catch (e) {
        assert.ok(e instanceof RuntimeError, String(e));
        assert.equal(e.code, "NOT_FOUND");
        return e.message;
      }
      throw new Error(`${functionName.length} chars resolved`);
    };
    const head = "Function not found: plant/plant0 ";
    assert.equal(
      notFoundMessage("x".repeat(10_000)),
      `${head}"${"x".repeat(PROVIDER_TEXT_CHARS)}\u2026"`,
    );
    // Exactly the bound: whole; one past it: cut, with an ellipsis.
    const fits = "f".repeat(PROVIDER_TEXT_CHARS);
    assert.equal(notFoundMessage(fits), `${head}"${fits}"`);
    assert.equal(
      notFoundMessage("f".repeat(PROVIDER_TEXT_CHARS + 1)),
      `${head}"${fits}\u2026"`,
    );
    // A line break, an escape and a quote cannot end the line nor forge the rest of it.
    assert.equal(
      notFoundMessage("a\nINFO forged\u001b[31m'\""),
      `${head}"a\\nINFO forged\\u001b[31m'\\""`,
    );
    return Promise.resolve();
  });
});

Deno.test("CallRouter: a function_name of 10 kB or with control characters that disagrees with the function_id is cut to PROVIDER_TEXT_CHARS and quoted in the INVALID_ARGUMENT message", async () => {
  await withPlant((rt) => {
    const mismatchMessage = (functionName: string) => {
      try {
        rt.router.resolve({ providerId: "plant", deviceId: "plant0", functionId: 2, functionName });
      } catch (e) {
        assert.ok(e instanceof RuntimeError, String(e));
        assert.equal(e.code, "INVALID_ARGUMENT");
        return e.message;
      }
      throw new Error(`${functionName.length} chars resolved`);
    };
    const head = 'function_id 2 is "set_fan", not ';
    const tail = " (plant/plant0)";
    const fits = "x".repeat(PROVIDER_TEXT_CHARS);
    assert.equal(mismatchMessage("x".repeat(10_000)), `${head}"${fits}\u2026"${tail}`);
    // Exactly the bound: whole; one past it: cut, with an ellipsis.
    assert.equal(mismatchMessage(fits), `${head}"${fits}"${tail}`);
    assert.equal(mismatchMessage(`${fits}y`), `${head}"${fits}\u2026"${tail}`);
    // A line break, an escape, a quote and NEL cannot end the line nor forge the rest of it.
    assert.equal(
      mismatchMessage("a\nINFO forged\u001b[31m'\"\u0085"),
      `${head}"a\\nINFO forged\\u001b[31m'\\"\\u0085"${tail}`,
    );
    return Promise.resolve();
  });
});

Deno.test("CallRouter refuses a gated call before validating its arguments; READ calls pass the gate", async () => {
  await withPlant(async (rt) => {
    // IDLE: the mode gate refuses the actuating call, whatever its arguments.
    await assert.rejects(
      manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(5) }),
      rejectsWith(
        "FAILED_PRECONDITION",
        "Call blocked in IDLE mode: plant/plant0 set_fan is actuating (switch to MANUAL to arm)",
      ),
    );
    await manualCall(rt, "plant", "plant0", READ_STATUS);
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0);
    await rt.modes.request("MANUAL");
    await assert.rejects(
      manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(5) }),
      rejectsWith("INVALID_ARGUMENT", "args.duty: 5 is above the maximum 1"),
    );
  }, { arm: false });
});

Deno.test("CallRouter serialises calls to a provider FIFO and refuses beyond the queue bound", async () => {
  await withPlant(async (rt) => {
    // All issued in one synchronous step: one takes the lock, the bound wait, the rest are refused.
    const total = MAX_QUEUED_CALLS_PER_PROVIDER + 6;
    const calls = Array.from(
      { length: total },
      (_, k) =>
        manualCall(rt, "plant", "plant0", SET_FAN, { duty: d((k + 1) / 100) }).then(
          () => "ok",
          (e: RuntimeError) => `${e.code}: ${e.message}`,
        ),
    );
    // The barrier is not bounded by the queue: it waits behind the full queue.
    assert.equal(await rt.router.drainFrom("plant")(20_000), true);
    // Every admitted call was answered, in order: the last admitted one wrote last.
    const admitted = MAX_QUEUED_CALLS_PER_PROVIDER + 1;
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), admitted / 100);
    const outcomes = await Promise.all(calls);
    assert.deepEqual(outcomes, [
      ...Array(admitted).fill("ok"),
      ...Array(total - admitted).fill(
        `UNAVAILABLE: Provider busy: plant has ${MAX_QUEUED_CALLS_PER_PROVIDER} calls queued`,
      ),
    ]);
    // Nothing is left holding the lock.
    assert.equal(await rt.router.drainFrom("plant")(1), true);
    await manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.05) });
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.05);
  });
});

Deno.test("CallRouter: a stop action waiting takes no place of the queue bound: MAX_QUEUED_CALLS_PER_PROVIDER calls still queue beside it", async () => {
  await withPlant(async (rt) => {
    const outcome = (p: Promise<unknown>) =>
      p.then(() => "ok", (e: RuntimeError) => `${e.code}: ${e.message}`);
    // All issued in one synchronous step: the first takes the lock, the stop action waits first.
    const first = outcome(manualCall(rt, "plant", "plant0", READ_STATUS));
    const stop = outcome(rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      args: { duty: d(0) },
      origin: "safety",
    }));
    const calls = Array.from(
      { length: MAX_QUEUED_CALLS_PER_PROVIDER + 1 },
      () => outcome(manualCall(rt, "plant", "plant0", READ_STATUS)),
    );
    assert.equal(await first, "ok");
    assert.equal(await stop, "ok");
    assert.deepEqual(await Promise.all(calls), [
      ...Array(MAX_QUEUED_CALLS_PER_PROVIDER).fill("ok"),
      `UNAVAILABLE: Provider busy: plant has ${MAX_QUEUED_CALLS_PER_PROVIDER} calls queued`,
    ]);
  });
});

Deno.test("CallRouter cancels a queued call on abort and the calls behind it still run", async () => {
  await withPlant(async (rt) => {
    const ctl = new AbortController();
    const first = manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.3) });
    const cancelled = rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_HEATER,
      args: { enabled: b(true) },
      origin: "manual",
      signal: ctl.signal,
    });
    const last = manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.7) });
    ctl.abort(); // the heater call is first in the queue
    await assert.rejects(cancelled, rejectsWith("UNAVAILABLE", "call cancelled while queued"));
    await first;
    await last;
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false, "never sent");
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.7);
    // A signal that aborts after its call got the lock changes nothing.
    const late = new AbortController();
    const granted = rt.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_HEATER,
      args: { enabled: b(true) },
      origin: "manual",
      signal: late.signal,
    });
    late.abort();
    await granted;
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), true);
  });
});

Deno.test("CallRouter never sends a call whose signal was aborted before it reached the lock, free or busy", async () => {
  await withPlant(async (rt) => {
    const heater = () =>
      rt.router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_HEATER,
        args: { enabled: b(true) },
        origin: "manual",
        signal: AbortSignal.abort(),
      });
    // The lock is free.
    await assert.rejects(heater(), rejectsWith("UNAVAILABLE", "call cancelled before it was sent"));
    // The lock is held: the call would have queued behind the fan call.
    const busy = manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.4) });
    await assert.rejects(heater(), rejectsWith("UNAVAILABLE", "call cancelled before it was sent"));
    await busy;
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.4);
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false, "never sent");
  });
});

Deno.test("CallRouter: an abort after the call got the lock neither stops it nor drops the calls behind it", async () => {
  await withPlant(async (rt) => {
    const ctl = new AbortController();
    let heaterChecks = 0;
    // Gates are checked again right after a call gets the lock: the abort comes exactly then.
    rt.router.addGate(({ fn }) => {
      if (fn.name === "set_heater" && ++heaterChecks === 2) ctl.abort();
      return null;
    });
    const calls = [
      manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.3) }),
      rt.router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_HEATER,
        args: { enabled: b(true) },
        origin: "manual",
        signal: ctl.signal,
      }),
      manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(0.8) }),
    ];
    await within(5000, Promise.all(calls));
    // Before validation, at its turn, and again after its write ahead (the kernel's audit trail).
    assert.equal(heaterChecks, 3);
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), true);
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.8);
  });
});

Deno.test("CallRouter refuses calls to a provider that is down with UNAVAILABLE before the device lookup", async () => {
  await withPlant(async (rt, r) => {
    const host = rt.registry.host("plant")!;
    r.kill("plant");
    await waitFor("plant down", () => !host.available);
    for (const deviceId of ["plant0", "plant9"]) {
      await assert.rejects(
        manualCall(rt, "plant", deviceId, SET_FAN, { duty: d(0.1) }),
        rejectsWith("UNAVAILABLE", "Provider unavailable: plant"),
      );
    }
    // Nothing was admitted, so there is nothing to drain.
    assert.equal(await rt.router.drainFrom("plant")(1), true);
  });
});

Deno.test("CallRouter never sends a tree's call whose tree was halted while it waited for its write-ahead under the lock; a manual call's late abort still does not stop it", async () => {
  await withPlant(async (rt) => {
    // AUTO is left (the tree halted, its calls' signals aborted) while the call, holding the
    // provider lock, waits for its decision to reach the audit journal: it must not be sent.
    const halted = new AbortController();
    const trail = rt.audit as unknown as { writeAhead: (...a: unknown[]) => Promise<unknown> };
    const writeAhead = trail.writeAhead.bind(rt.audit);
    trail.writeAhead = async (...a: unknown[]) => {
      halted.abort();
      return await writeAhead(...a);
    };
    try {
      const tree = rt.router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_HEATER,
        args: { enabled: b(true) },
        origin: "automated",
        signal: halted.signal,
      });
      await assert.rejects(
        tree,
        rejectsWith("UNAVAILABLE", "call cancelled before it was sent: its tree was halted"),
      );
      assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false, "never sent");
      const refused = (await rt.audit.query({ limit: 100 })).entries.find((e) =>
        /its tree was halted/.test(e.reason ?? "")
      );
      assert.equal(refused?.outcome, "refused", "audited as refused: nothing was sent");
      assert.equal(refused?.refused_by, "queue");
      // A manual call whose client went away at the same moment got the lock: it goes out.
      const client = new AbortController();
      trail.writeAhead = async (...a: unknown[]) => {
        client.abort();
        return await writeAhead(...a);
      };
      await rt.router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_HEATER,
        args: { enabled: b(true) },
        origin: "manual",
        signal: client.signal,
      });
      assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), true);
    } finally {
      trail.writeAhead = writeAhead;
    }
  });
});

Deno.test("CallRouter refuses a call whose onQueued throws without keeping its provider's lock, on a free lock or queued behind another: the calls after it go through", async () => {
  await withPlant(async (rt) => {
    const req = (duty: number, onQueued?: () => void) => ({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      args: { duty: d(duty) },
      origin: "manual" as const,
      onQueued,
    });
    const broken = () => {
      throw new Error("onQueued broke");
    };
    // The lock free: the call takes it, then its onQueued throws.
    await assert.rejects(rt.router.call(req(0.1, broken)), /onQueued broke/);
    await within(5000, rt.router.call(req(0.2)));
    // Queued behind a call on the wire.
    const first = rt.router.call(req(0.3));
    await assert.rejects(rt.router.call(req(0.4, broken)), /onQueued broke/);
    await first;
    const after = await within(5000, rt.router.call(req(0.5)));
    assert.equal(after.functionId, SET_FAN);
  });
});

Deno.test("CallRouter tells onQueued once a call is admitted to its provider's queue (behind another), never for one refused before it", async () => {
  await withPlant(async (rt) => {
    const seen: string[] = [];
    const req = (what: string, duty: number) => ({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      args: { duty: d(duty) },
      origin: "manual" as const,
      onQueued: () => seen.push(`${what} queued`),
      onSent: () => seen.push(`${what} sent`),
    });
    const first = rt.router.call(req("first", 0.3));
    const second = rt.router.call(req("second", 0.4));
    // Both admitted synchronously; the second waits behind the first, not written yet.
    assert.deepEqual(seen, ["first queued", "second queued"]);
    const refused = rt.router.call(req("refused", 7)); // out of bounds: validation refuses it
    await assert.rejects(refused);
    await first;
    await second;
    assert.deepEqual(seen, ["first queued", "second queued", "first sent", "second sent"]);
  });
});
