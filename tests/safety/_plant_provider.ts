/**
 * A minimal ADPP provider for safety tests, run as a real child process (the same program runs
 * in-process: tests/helpers/programs.ts plantProgram). One device `plant0`: a heater relay and a
 * fan duty (ACTUATE) plus `read_status` (READ: counts reads, answers the count); see
 * tests/helpers/fake_provider.ts plantDevice.
 *
 * Why not the simulated provider: its always-present chaos_control device has actuating
 * functions (crash, send_garbage_frame, ...) that no setpoint may call, so the sim can never be
 * fully covered by setpoints, and the sim has no READ function to show that read-only calls pass
 * the latch.
 *
 *   --latency-ms N       every actuating call answers N ms after it arrived (a slow provider; the
 *                        provider serves one request at a time, so its polls wait too)
 *   --read-latency-ms N  read_status answers N ms after it arrived
 *   --grow-marker PATH   the first process (PATH absent) creates PATH and declares only its READ
 *                        function; a later process (a restart) declares every function, so a
 *                        rediscovery adds actuating functions
 */
import { runStdioProvider } from "../../src/provider_sdk/mod.ts";
import { plantProgram, stdioHost } from "../helpers/programs.ts";

await runStdioProvider(plantProgram(stdioHost()));
