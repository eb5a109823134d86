/**
 * What the in-process mode-hook tests share (mode_fault_hook_calls_settled, mode_provider_back*,
 * mode_fault_again_bounded, mode_fault_long_device_id, mode_hook_peer_text,
 * tests/control/_provider_back_rig.ts): a router that holds each call until the test answers it,
 * an inventory whose providers are all up and whose returns the test announces, device returns the
 * test announces, and real modes over them with the hooks the test gives; and the plant provider
 * in a kernel (helpers/rig) with the hooks the test gives, its every call answered with an error.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { ModeManager, type ModeManagerOptions } from "../../src/control/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { StatusCode } from "../../src/adpp/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { testLogger } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { plantProvider } from "../safety/_fixture.ts";

/** A call the holding router holds until the test answers it. */
export interface HeldCall {
  readonly req: CallRequest;
  answer(): void;
}

/** A router that holds every call (in `held`, in the order made) until the test answers it. */
export function holdingRouter(): { held: HeldCall[]; router: CallRouter } {
  const held: HeldCall[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => held.push({ req, answer: () => resolve({}) })),
  } as unknown as CallRouter;
  return { held, router };
}

/** Waits (bounded) until `n` calls are held. */
export async function heldCalls(held: readonly HeldCall[], n: number): Promise<void> {
  for (let i = 0; i < 500 && held.length < n; i++) await new Promise((r) => setTimeout(r, 2));
  assert.equal(held.length, n, `${n} call(s) held: ${JSON.stringify(held.map((h) => h.req))}`);
}

/** A provider that is up, with timeout_ms 1000. */
export function upProvider(id: string): ProviderSummary {
  return { id, available: true, config: { timeoutMs: 1000 } } as unknown as ProviderSummary;
}

/** One upProvider host per id, the same each time asked (as a registry lists one per id). */
function upProviders(): (id: string) => ProviderSummary {
  const hosts = new Map<string, ProviderSummary>();
  return (id) => {
    const host = hosts.get(id) ?? upProvider(id);
    hosts.set(id, host);
    return host;
  };
}

/**
 * An inventory in which every provider is up (`provider(id)`, default one upProvider per id);
 * `comesBack(id)` tells its availability listeners that provider `id` is up again.
 */
export function returnsInventory(provider: (id: string) => ProviderSummary = upProviders()): {
  inventory: InventoryReader;
  comesBack: (id: string) => void;
} {
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    provider,
    providers: () => [],
    devices: () => [],
  } as unknown as InventoryReader;
  return {
    inventory,
    comesBack: (id: string) => {
      for (const l of availability) l(provider(id), true);
    },
  };
}

/** The device returns of modes: `answersAgain(p, d)` tells their listeners device d of p answers. */
export function deviceReturns(): {
  devices: NonNullable<ModeManagerOptions["devices"]>;
  answersAgain: (providerId: string, deviceId: string) => void;
} {
  const returns: ((providerId: string, deviceId: string) => void)[] = [];
  return {
    devices: { onDeviceReturn: (l) => (returns.push(l), () => {}) },
    answersAgain: (providerId, deviceId) => {
      for (const l of returns) l(providerId, deviceId);
    },
  };
}

/**
 * Real modes over `router` and `inventory` (automation enabled, manual gating BLOCK, the system
 * clock, `o.log` or the quiet test logger, `o.devices` the device returns if given) with
 * `beforeTransition` hooks and `o.afterTransition` hooks (none unless given).
 */
export function hookModes(
  router: CallRouter,
  inventory: InventoryReader,
  beforeTransition: HookConfig[],
  o: {
    log?: Logger;
    devices?: ModeManagerOptions["devices"];
    afterTransition?: HookConfig[];
  } = {},
): ModeManager {
  return new ModeManager({
    router,
    inventory,
    bus: new EventBus(),
    clock: systemClock,
    log: o.log ?? testLogger(),
    ...(o.devices === undefined ? {} : { devices: o.devices }),
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition, afterTransition: o.afterTransition ?? [] },
  });
}

/**
 * A kernel (helpers/rig) with the plant provider in-process, automation off (manual gating
 * BLOCK) and `hooks`, each of the plant's calls answered UNAVAILABLE with `message`.
 */
export async function plantRefusingRig(
  hooks: { beforeTransition?: HookConfig[]; afterTransition?: HookConfig[] },
  message: string,
): Promise<Rig> {
  const r = await rig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: false,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: {
        beforeTransition: hooks.beforeTransition ?? [],
        afterTransition: hooks.afterTransition ?? [],
      },
    },
  });
  r.provider<FakeProvider>("plant").answer("call", {
    error: { code: StatusCode.UNAVAILABLE, message },
  });
  return r;
}
