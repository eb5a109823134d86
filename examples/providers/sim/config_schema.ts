import { JSON_SCHEMA_DIALECT, type JsonSchema } from "../../../src/provider_sdk/mod.ts";
import { SIM_DEVICE_TYPES } from "./config.ts";

/**
 * The JSON Schema of the simulator's configuration file, printed by `--config-schema` (so a
 * workbench can render its form). Modeled on the reference simulator's schema (anolis-provider-sim,
 * as vendored by anolis-workbench: anolis_workbench/schemas/providers/sim.config-schema.json) with
 * this simulator's differences: no `sim` mode (an external engine is not supported), the per-type
 * device keys, and `host.device_nodes`. It is never stricter than `parseSimConfig` plus device
 * initialisation under `startup_policy: strict`: a configuration the schema rejects is one the
 * simulator refuses too (tests/sim/executable_profile_test.ts checks the shipped files against it).
 */
export const SIM_CONFIG_SCHEMA: JsonSchema = {
  $schema: JSON_SCHEMA_DIALECT,
  type: "object",
  title: "Simulated provider configuration",
  description: "Simulated devices (tempctl, motorctl, relayio, analogsensor) for development " +
    "and testing, plus chaos_control for fault injection.",
  properties: {
    provider: {
      type: "object",
      properties: {
        name: {
          type: "string",
          title: "Provider name",
          description: "Stable identifier for this provider instance.",
          pattern: "^[A-Za-z0-9_.-]{1,64}$",
        },
      },
    },
    startup_policy: {
      type: "string",
      title: "Startup policy",
      oneOf: [
        { const: "strict", title: "Abort on the first device init failure" },
        { const: "degraded", title: "Continue with the devices that initialised" },
      ],
      default: "strict",
    },
    devices: {
      type: "array",
      title: "Devices",
      items: {
        type: "object",
        properties: {
          id: {
            type: "string",
            title: "Device id",
            minLength: 1,
            not: { const: "chaos_control" },
            "x-anolis-unique": true,
          },
          type: {
            type: "string",
            title: "Device type",
            description: `One of ${SIM_DEVICE_TYPES.join(", ")}; another type fails device ` +
              "initialisation (startup_policy decides what follows).",
            minLength: 1,
          },
          initial_temp: {
            type: "number",
            title: "Initial temperature (\u00b0C)",
            description: "tempctl only; default 25.0.",
          },
          temp_range: {
            type: "array",
            title: "Temperature range (\u00b0C)",
            description: "tempctl only: [min, max] with min < max, containing initial_temp.",
            items: { type: "number" },
            minItems: 2,
            maxItems: 2,
          },
          max_speed: {
            type: "number",
            title: "Maximum speed (RPM)",
            description: "motorctl only; default 3200.",
            exclusiveMinimum: 0,
            maximum: 10000,
          },
        },
        required: ["id", "type"],
      },
    },
    simulation: {
      type: "object",
      properties: {
        mode: {
          type: "string",
          title: "Simulation mode",
          oneOf: [
            { const: "non_interacting", title: "Local physics (fixed tick)" },
            { const: "inert", title: "No automatic updates" },
          ],
        },
        tick_rate_hz: {
          type: "number",
          title: "Tick rate (Hz)",
          description: "Required for non_interacting.",
          minimum: 0.1,
          maximum: 1000,
          "x-anolis-placeholder": "10",
        },
      },
      required: ["mode"],
      allOf: [
        {
          if: { properties: { mode: { const: "non_interacting" } }, required: ["mode"] },
          then: { required: ["tick_rate_hz"] },
        },
      ],
    },
    host: {
      type: "object",
      title: "Host requirements",
      properties: {
        device_nodes: {
          type: "array",
          title: "Device nodes",
          description: "Absolute paths the simulated hardware needs on the host (a stand-in for " +
            "a bus node such as /dev/i2c-1): each must exist and be readable, or the provider " +
            "serves no devices (--check-host reports each).",
          items: { type: "string", pattern: "^/", "x-anolis-placeholder": "/dev/i2c-1" },
        },
      },
    },
  },
  required: ["simulation"],
};
