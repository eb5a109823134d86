/**
 * True when an answer's `device_id` names another device than the one asked about: nothing in it
 * is the asked device's. An empty `device_id` is taken as the asked device, as discovery, the poll,
 * a fresh read and a call all take it (the fast ReadSignals decoder applies the same rule to the
 * bytes: decodeReadSignalsInto).
 */
export function isOtherDeviceAnswer(askedDeviceId: string, answeredDeviceId: string): boolean {
  return answeredDeviceId !== "" && answeredDeviceId !== askedDeviceId;
}
