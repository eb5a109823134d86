/**
 * A provider on the provider SDK whose call handler prints to stdout (console.log), as a provider
 * author debugging a handler might: one device `d0`, one bool signal `on`, function 1 `set_on`.
 * The printed text lands on stdout, between the ADPP frames. Run by provider_session_test.ts.
 */
import { DeviceProvider, runStdioProvider } from "../../src/provider_sdk/mod.ts";

let on = false;
const provider = new DeviceProvider({ name: "printing", version: "1.0.0" }, [{
  deviceId: "d0",
  typeId: "test.printing",
  typeVersion: "1.0",
  label: "Printing",
  signals: [{ id: "on", name: "On", type: "bool", pollHintHz: 0, staleAfterMs: 0, read: () => on }],
  functions: [{
    id: 1,
    name: "set_on",
    category: "ACTUATE",
    args: [{ name: "on", type: "bool" }],
    handler: (args) => {
      on = args.bool("on");
      console.log(`set_on called, on=${on}`);
    },
  }],
}]);
await runStdioProvider(provider);
