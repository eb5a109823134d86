/**
 * ADPP stdio framing: uint32 little-endian payload length, then the payload (adpp-wire.md §2).
 * Max payload 1 MiB (exactly 1 MiB allowed). Zero-length frames are never valid messages.
 */

/** Largest payload either side accepts: `len > MAX_FRAME_BYTES` is an error. */
export const MAX_FRAME_BYTES = 1_048_576;

/** Why a frame stream ended badly. */
export type FrameErrorKind = "oversize" | "zero_length" | "truncated";

export class FrameError extends Error {
  readonly kind: FrameErrorKind;
  constructor(kind: FrameErrorKind, message: string) {
    super(message);
    this.name = "FrameError";
    this.kind = kind;
  }
}

/** Prefixes one payload with its length. Throws FrameError for an oversize or empty payload. */
export function encodeFrame(payload: Uint8Array, maxBytes = MAX_FRAME_BYTES): Uint8Array {
  if (payload.length > maxBytes) {
    throw new FrameError("oversize", `frame of ${payload.length} bytes exceeds ${maxBytes}`);
  }
  if (payload.length === 0) throw new FrameError("zero_length", "zero-length frame");
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length, true);
  out.set(payload, 4);
  return out;
}

/**
 * Splits a byte stream into payloads. Handles fragments and several frames per chunk; errors the
 * stream on an oversize or zero-length prefix (before buffering it) and on EOF mid-frame.
 * A clean EOF between frames just ends the stream.
 *
 * Linear in the bytes received however the writer splits them: a frame that arrives in pieces
 * is gathered into one buffer allocated once its length is known, so every payload byte is
 * copied exactly once (a frame inside one chunk is copied once too, so it does not pin the
 * chunk's memory).
 */
export class FrameDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(maxBytes = MAX_FRAME_BYTES) {
    const prefix = new Uint8Array(4);
    let prefixFill = 0; // bytes of the length prefix received so far
    let payload: Uint8Array | null = null; // the frame being gathered (its length is known)
    let payloadFill = 0;
    super({
      transform(chunk, controller) {
        let off = 0;
        while (off < chunk.length) {
          if (payload === null) {
            let need: number;
            if (prefixFill === 0 && chunk.length - off >= 4) {
              need = readLength(chunk, off);
              off += 4;
            } else {
              while (prefixFill < 4 && off < chunk.length) prefix[prefixFill++] = chunk[off++];
              if (prefixFill < 4) return;
              prefixFill = 0;
              need = readLength(prefix, 0);
            }
            if (need > maxBytes) {
              controller.error(
                new FrameError("oversize", `frame length ${need} exceeds ${maxBytes}`),
              );
              return;
            }
            if (need === 0) {
              controller.error(new FrameError("zero_length", "zero-length frame"));
              return;
            }
            if (chunk.length - off >= need) {
              controller.enqueue(chunk.slice(off, off + need)); // whole frame in this chunk
              off += need;
              continue;
            }
            payload = new Uint8Array(need);
            payloadFill = 0;
          }
          const take = Math.min(payload.length - payloadFill, chunk.length - off);
          payload.set(chunk.subarray(off, off + take), payloadFill);
          payloadFill += take;
          off += take;
          if (payloadFill === payload.length) {
            controller.enqueue(payload);
            payload = null;
          }
        }
      },
      flush(controller) {
        if (payload !== null || prefixFill > 0) {
          controller.error(new FrameError("truncated", "stream ended in the middle of a frame"));
        }
      },
    });
  }
}

function readLength(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

/** Prefixes each payload with its length; errors on an oversize or empty payload. */
export class FrameEncoderStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(maxBytes = MAX_FRAME_BYTES) {
    super({
      transform(payload, controller) {
        controller.enqueue(encodeFrame(payload, maxBytes));
      },
    });
  }
}
