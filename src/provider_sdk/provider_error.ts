import { StatusCode as WireStatusCode } from "../adpp/mod.ts";

/** A wire status code (the Status.Code numbers of proto/anolis/deviceprovider/v1/status.proto). */
export type WireStatusCodeNumber = (typeof WireStatusCode)[keyof typeof WireStatusCode];

/**
 * An error a provider handler throws to answer with a non-OK Status. The serve loop turns it into
 * `Response{status{code, message}}` with no payload; any other thrown error becomes CODE_INTERNAL.
 */
export class ProviderError extends Error {
  readonly code: WireStatusCodeNumber;

  constructor(code: WireStatusCodeNumber, message: string) {
    super(message);
    this.name = "ProviderError";
    this.code = code;
  }

  /** CODE_INVALID_ARGUMENT: bad input (missing/mistyped argument, out of bounds). */
  static invalidArgument(message: string): ProviderError {
    return new ProviderError(WireStatusCode.INVALID_ARGUMENT, message);
  }

  /** CODE_NOT_FOUND: unknown device, function or signal. */
  static notFound(message: string): ProviderError {
    return new ProviderError(WireStatusCode.NOT_FOUND, message);
  }

  /** CODE_FAILED_PRECONDITION: the device state forbids the action. */
  static failedPrecondition(message: string): ProviderError {
    return new ProviderError(WireStatusCode.FAILED_PRECONDITION, message);
  }

  /** CODE_UNIMPLEMENTED: the operation is not supported by this provider. */
  static unimplemented(message: string): ProviderError {
    return new ProviderError(WireStatusCode.UNIMPLEMENTED, message);
  }

  /** CODE_UNAVAILABLE: temporarily unable (hardware busy, bus down). */
  static unavailable(message: string): ProviderError {
    return new ProviderError(WireStatusCode.UNAVAILABLE, message);
  }

  /** CODE_INTERNAL: a provider bug or unexpected hardware error. */
  static internal(message: string): ProviderError {
    return new ProviderError(WireStatusCode.INTERNAL, message);
  }
}
