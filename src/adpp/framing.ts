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
 */
export class FrameDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(maxBytes = MAX_FRAME_BYTES) {
    let buf: Uint8Array = new Uint8Array(0);
    let need = -1; // payload length of the frame being read, -1 while reading the prefix
    super({
      transform(chunk, controller) {
        buf = buf.length === 0 ? chunk : concat(buf, chunk);
        let off = 0;
        for (;;) {
          if (need < 0) {
            if (buf.length - off < 4) break;
            need = new DataView(buf.buffer, buf.byteOffset + off, 4).getUint32(0, true);
            off += 4;
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
          }
          if (buf.length - off < need) break;
          controller.enqueue(buf.slice(off, off + need));
          off += need;
          need = -1;
        }
        buf = off === 0 ? buf : buf.slice(off);
      },
      flush(controller) {
        if (need >= 0 || buf.length > 0) {
          controller.error(new FrameError("truncated", "stream ended in the middle of a frame"));
        }
      },
    });
  }
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

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
