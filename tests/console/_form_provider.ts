/**
 * A small provider for the console's form tests, run as a real child process:
 * `deno run --allow-env tests/console/_form_provider.ts`. Device `panel0` declares one argument
 * of every ADPP type (bounds, allowed values, optional arguments) on an actuating function
 * `configure`, whose handler stores what it got in signals the runtime polls, and a read-only
 * function `ping` that counts calls. What the console's form sent is then visible in the state.
 */
import {
  DeviceProvider,
  ProviderError,
  runStdioProvider,
  type ScalarValue,
} from "../../src/provider_sdk/mod.ts";

const last = {
  level: 0,
  count: 0,
  offset: 0,
  enabled: false,
  choice: "",
  note: "(none)",
  blob: "(none)",
  pings: 0,
};

const signal = (
  id: string,
  type: "double" | "int64" | "bool" | "string",
  read: () => ScalarValue,
) => ({
  id,
  name: id.replaceAll("_", " "),
  type,
  pollHintHz: 10,
  staleAfterMs: 0,
  read,
});

const provider = new DeviceProvider({ name: "form-provider", version: "1.0.0" }, [{
  deviceId: "panel0",
  typeId: "test.form_panel",
  typeVersion: "1.0",
  label: "Form Test Panel",
  signals: [
    signal("last_level", "double", () => last.level),
    signal("last_count", "int64", () => last.count),
    signal("last_offset", "int64", () => last.offset),
    signal("last_enabled", "bool", () => last.enabled),
    signal("last_choice", "string", () => last.choice),
    signal("last_note", "string", () => last.note),
    signal("last_blob", "string", () => last.blob),
    signal("pings", "int64", () => last.pings),
  ],
  functions: [
    {
      id: 1,
      name: "configure",
      description: "Store one value of every type",
      category: "ACTUATE",
      args: [
        { name: "level", type: "double", min: -10, max: 10, unit: "V" },
        { name: "count", type: "int64", min: 1, max: 5 },
        { name: "offset", type: "uint64", max: 1000, required: false },
        { name: "enabled", type: "bool" },
        { name: "choice", type: "string", allowedValues: ["low", "medium", "high"] },
        { name: "note", type: "string", required: false },
        { name: "blob", type: "bytes", required: false },
      ],
      handler: (args) => {
        last.level = args.double("level");
        last.count = args.int64("count");
        last.offset = args.has("offset") ? args.uint64("offset") : -1;
        last.enabled = args.bool("enabled");
        last.choice = args.string("choice");
        last.note = args.has("note") ? args.string("note") : "(none)";
        last.blob = args.has("blob")
          ? [...args.bytes("blob")].map((b) => b.toString(16).padStart(2, "0")).join("")
          : "(none)";
      },
    },
    {
      id: 2,
      name: "ping",
      description: "Count a ping (no side effect)",
      category: "READ",
      handler: () => {
        last.pings++;
      },
    },
    {
      id: 3,
      name: "refuse",
      description: "Always refused by the device",
      category: "ACTUATE",
      handler: () => {
        throw ProviderError.failedPrecondition("refuse: the panel is locked");
      },
    },
  ],
}]);

await runStdioProvider(provider);
