/** Golden vectors of the ADPP encoding (hex produced with protoc 3.21 from the v1.2.0 schema). */
export const GOLDEN = {
  helloRequest: "0801521b0a027631120e616e6f6c69732d72756e74696d651a05302e312e30",
  waitReadyRequest: "080282010408e0d403",
  listDevicesRequest: "08035a00",
  getHealthRequest: "08077a00",
  readSignalsRequest: "08046a190a096d6f746f7263746c30120c6d6f746f72315f7370656564",
  callRequest:
    "080972260a0874656d7063746c3010031a097365745f72656c6179220d0a057374617465120408011000",
  helloResponse:
    "08011206080112026f6b52270a0276311201701a0131221b0a13737570706f7274735f776169745f7265616479120474727565",
  notFoundResponse: "08051205080b120178",
  argSpec: "0a04647574791004280131000000000000000039000000000000f03f",
} as const;

/** Bytes of a hex string. */
export function unhex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Lower-case hex of bytes. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A frame: 4-byte little-endian length prefix + payload, as hex. */
export function frameHex(payloadHex: string): string {
  const n = payloadHex.length / 2;
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, n, true);
  return hex(prefix) + payloadHex;
}
