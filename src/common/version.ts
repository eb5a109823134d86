/** Runtime release version (kept equal to deno.json "version"). */
export const RUNTIME_VERSION = "0.2.0";
/** The anolis HTTP v0 contract version this API follows; `--version` prints it. */
export const HTTP_CONTRACT_VERSION = "0.1.40";
/** ADPP protocol version string sent and required in Hello. */
export const ADPP_PROTOCOL_VERSION = "v1";
/** ADPP schema release the proto/ files are written from. */
export const ADPP_SCHEMA_VERSION = "1.2.0";
