export * from "./errors.ts";
export * from "./typed_value.ts";
export * from "./json_text.ts";
export * from "./capabilities.ts";
export * from "./host.ts";
export * from "./version.ts";
export * from "./health.ts";
export * from "./bytes.ts";
export * from "./utf8.ts";
export { escapeControl, hasControlCharacter } from "./escape_control.ts";
export {
  causesWhy,
  deviceReturnWhy,
  DEVICES_ANSWERING,
  joinCauses,
  MAX_NAMED_IN_WARNING,
  namedList,
  onlyDeviceReturns,
  PROVIDER_BACK_WHY,
  type ProviderBackCause,
  type ProviderBackCauses,
} from "./named_list.ts";
export { basenameWithoutExtension, dirnameOf, pathBelow, resolvePath } from "./paths.ts";
export * from "./metrics.ts";
export * from "./grid.ts";
export { isLoopbackHost } from "./loopback.ts";
export { tellEach } from "./listeners.ts";
export { DEVICE_DOWN_AFTER_POLLS, DEVICE_DOWN_MIN_MS, deviceDownAfterMs } from "./device_down.ts";
export {
  DERIVED_STALE_CYCLES,
  DERIVED_STALE_MIN_MS,
  DERIVED_WARN_CYCLES,
  DERIVED_WARN_MIN_MS,
  derivedStaleAfterMs,
  derivedWarnAfterMs,
} from "./liveness_bounds.ts";
export * from "./mqtt.ts";
export { SpellLog, type SpellLogOptions, SpellLogs } from "./spell_log.ts";
export {
  PROVIDER_TEXT_CHARS,
  providerText,
  providerTextWithin,
  quoteCutText,
  quoteProviderText,
  quoteProviderTextWithin,
  type ReloadStart,
  reloadStartWords,
  startFailureWords,
} from "./provider_text.ts";
export { MAX_SSE_CLIENTS, maxStreamsFor, requestConnectionsShort } from "./event_streams.ts";
export { DepartedDates, latestDate, transitionDate } from "./dates.ts";
export {
  httpUrlProblem,
  quoteUrl,
  REDACTED,
  URL_TEXT_CHARS,
  urlPassword,
  urlWithoutPassword,
} from "./url_text.ts";
export { pageBounds } from "./paging.ts";
