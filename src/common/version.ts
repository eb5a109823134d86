/** Runtime release version (kept equal to deno.json "version"). */
export const RUNTIME_VERSION = "0.2.0";
/**
 * The anolis HTTP v0 contract version this API follows (the anolis release whose OpenAPI the
 * anolis-workbench pins); `--version` prints it. Deliberate differences:
 * docs/migrating-from-anolis.md.
 */
export const HTTP_CONTRACT_VERSION = "0.1.41";
/** ADPP protocol version string sent and required in Hello. */
export const ADPP_PROTOCOL_VERSION = "v1";
/**
 * The anolis-protocol release this runtime and the provider SDK follow. Its proto files are those
 * of 1.2.0 (1.3.0 to 1.8.0 changed no wire message: conformance levels, semantics clarifications,
 * the executable profile's --config-schema and --check-host).
 */
export const ADPP_SCHEMA_VERSION = "1.8.0";
