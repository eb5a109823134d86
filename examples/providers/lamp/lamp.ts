/**
 * A lamp: the smallest working provider on the provider SDK (src/provider_sdk/README.md shows this
 * file). One device, `lamp0`, with one bool signal `on` and one function `set_on`. Its safe state
 * is off, the state it starts in.
 */
import {
  createStderrLogger,
  type DeviceDefinition,
  DeviceProvider,
  runStdioProvider,
} from "@hwrt/runtime/provider-sdk";

// stdout carries the protocol: log to stderr only.
const log = createStderrLogger("lamp");

// What real hardware would hold; here a variable.
let on = false;

const lamp: DeviceDefinition = {
  deviceId: "lamp0",
  typeId: "example.lamp",
  typeVersion: "1.0",
  label: "Lamp",
  signals: [
    {
      id: "on",
      name: "On",
      type: "bool",
      pollHintHz: 2, // > 0: the runtime polls it
      staleAfterMs: 2000,
      read: () => on,
    },
  ],
  functions: [
    {
      id: 1,
      name: "set_on",
      // Anything but READ actuates: the runtime gates it (IDLE, e-stop) and audits it.
      category: "ACTUATE",
      args: [{ name: "on", type: "bool" }], // checked by the SDK before the handler runs
      handler: (args) => {
        on = args.bool("on");
        log.info(`lamp0 ${on ? "on" : "off"}`);
      },
    },
  ],
  // Applied by the SDK on stdin EOF (the runtime is gone) and on SIGTERM/SIGINT.
  applySafeState: () => {
    on = false;
  },
};

const provider = new DeviceProvider({ name: "lamp", version: "1.0.0" }, [lamp]);
await runStdioProvider(provider, { logger: log });
