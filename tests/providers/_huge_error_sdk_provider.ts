/**
 * A provider on the provider SDK whose call handler throws an Error with a message larger than a
 * frame (MAX_FRAME_BYTES + 1 characters), as a handler quoting a whole response body might: one
 * device `d0`, one bool signal `on`, function 1 `fail`. Run by provider_session_test.ts.
 */
import {
  createStderrLogger,
  DeviceProvider,
  MAX_FRAME_BYTES,
  runStdioProvider,
} from "../../src/provider_sdk/mod.ts";

const provider = new DeviceProvider({ name: "huge-error", version: "1.0.0" }, [{
  deviceId: "d0",
  typeId: "test.huge_error",
  typeVersion: "1.0",
  label: "Huge error",
  signals: [{
    id: "on",
    name: "On",
    type: "bool",
    pollHintHz: 0,
    staleAfterMs: 0,
    read: () => false,
  }],
  functions: [{
    id: 1,
    name: "fail",
    category: "ACTUATE",
    args: [],
    handler: () => {
      throw new Error("e".repeat(MAX_FRAME_BYTES + 1));
    },
  }],
}]);
await runStdioProvider(provider, { logger: createStderrLogger("huge-error") });
