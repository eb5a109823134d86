export * from "./alarm_monitor.ts";
export * from "./alarm_engine.ts";
export { InputProblem, SignalInput, valueText } from "./signal_input.ts";
export { Interlock } from "./interlock.ts";
