/** Runtime release version (kept equal to deno.json "version"). */
export const RUNTIME_VERSION = "0.2.0";
/** HTTP contract schema version (spec "Versioning"). */
export const HTTP_CONTRACT_VERSION = "0.1.40";
/** ADPP protocol version string sent and required in Hello. */
export const ADPP_PROTOCOL_VERSION = "v1";
/** ADPP schema release the proto/ files are written from. */
export const ADPP_SCHEMA_VERSION = "1.2.0";
