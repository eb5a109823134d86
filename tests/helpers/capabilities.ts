/**
 * Device capabilities for in-process tests (an inventory the test makes up): a device with the
 * functions and signals a test gives it, every descriptive field empty.
 */
import type { DeviceCapabilities, FunctionSpec, SignalSpec } from "../../src/common/mod.ts";

/**
 * Device `providerId/deviceId` with `functions`, `signals` and `tags` (none by default); its
 * provider name, type, label and address empty.
 */
export function deviceCapabilities(
  providerId: string,
  deviceId: string,
  o: {
    readonly functions?: readonly FunctionSpec[];
    readonly signals?: readonly SignalSpec[];
    readonly tags?: Record<string, string>;
  } = {},
): DeviceCapabilities {
  return {
    device: {
      providerId,
      deviceId,
      providerName: "",
      typeId: "",
      typeVersion: "",
      label: "",
      address: "",
      tags: o.tags ?? {},
    },
    functions: o.functions ?? [],
    signals: o.signals ?? [],
  };
}
