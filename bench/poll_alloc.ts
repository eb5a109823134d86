/**
 * deno run -A bench/poll_alloc.ts [--providers 10] [--warm 20] [--secs 20] [--top 25] [--runtime-cmd "<cmd>"] [--out F]
 *
 * Issue 39 ("avoid a promise and an allocation per sample"): what the runtime allocates per device
 * poll while it idle-polls, and where. The runtime (the bundle by default; a `deno run …` command:
 * `--inspect` is added after `run`) polls `--providers` simulated providers × 4 devices at 100 ms;
 * after `--warm` seconds V8's sampling heap profiler (the inspector's HeapProfiler, one sample per
 * SAMPLING_INTERVAL_BYTES allocated, objects collected by minor and major GCs included) runs for
 * `--secs`. Prints the bytes allocated per device poll (every device of the generated config is
 * polled at 10 Hz) and the `--top`
 * functions by their own allocation, bytes per poll, with their place in the bundle; `--out`
 * writes those and the heaviest stacks (five frames) as JSON. The polls are those the runtime
 * counted in the window (`runtime_poll_duration_seconds` in GET /metrics; the polls due when it
 * serves none): a loaded machine makes fewer. A sampling profile: a few percent
 * of noise per function between runs. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Mean bytes between two samples of the profiler (V8's default is 32 KiB). */
const SAMPLING_INTERVAL_BYTES = 256;
/** How long the runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;
/** Longest wait for one inspector answer (the profile of a long window is large). */
const INSPECTOR_TIMEOUT_MS = 60_000;
/** Devices per simulated provider in the generated config, each polled at 10 Hz. */
const DEVICES_PER_PROVIDER = 4;
const POLLS_PER_SECOND = 10;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** A minimal inspector session over the runtime's WebSocket (Chrome DevTools Protocol). */
async function inspector(port: number) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.id !== undefined) pending.get(m.id)?.(m.result ?? m.error);
    pending.delete(m.id);
  };
  return {
    send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
      const id = ++next;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${method}: no answer`)),
          INSPECTOR_TIMEOUT_MS,
        );
        pending.set(id, (r) => {
          clearTimeout(timer);
          resolve(r);
        });
        ws.send(JSON.stringify({ id, method, params }));
      });
    },
    close: () => ws.close(),
  };
}

/**
 * Device polls the runtime made since start: the sum of its ReadSignals round-trip histogram's
 * counts over providers (GET /metrics); null when the runtime serves no such figure.
 */
async function pollsDone(port: number): Promise<number | null> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    let n: number | null = null;
    for (const m of text.matchAll(/^runtime_poll_duration_seconds_count\{[^}]*\} (\d+)$/gm)) {
      n = (n ?? 0) + Number(m[1]);
    }
    return n;
  } catch {
    return null;
  }
}

function frameName(n: ProfileNode): string {
  const f = n.callFrame;
  return `${f.functionName || "(anonymous)"} ${f.url.split("/").pop() || "(native)"}:${
    f.lineNumber + 1
  }`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      providers: { type: "string", default: "10" },
      warm: { type: "string", default: "20" },
      secs: { type: "string", default: "20" },
      top: { type: "string", default: "25" },
      "runtime-cmd": { type: "string" },
      out: { type: "string" },
    },
  });
  const providers = Number(values.providers);
  const secs = Number(values.secs);
  const defaults = defaultCommands(REPO);
  const cmd = values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime;
  // `deno run …`, or behind `env VAR=value …` (the default: the runtime's malloc setting).
  const deno = cmd[0] === "env" ? cmd.findIndex((w, i) => i > 0 && !w.includes("=")) : 0;
  const run = cmd.indexOf("run");
  if (cmd[deno] !== "deno" || run !== deno + 1) {
    throw new Error(`--runtime-cmd must be a 'deno run …' command (got '${cmd.join(" ")}')`);
  }
  if ([...cmd, ...defaults.provider].some((w) => w.startsWith(BUNDLE_DIR.pathname))) {
    await buildAll();
  }
  const inspectPort = freePort();
  const inspected = [
    ...cmd.slice(0, run + 1),
    `--inspect=127.0.0.1:${inspectPort}`,
    ...cmd.slice(run + 1),
  ];
  const tmp = await Deno.makeTempDir({ prefix: "poll_alloc_" });
  try {
    const sim = `${tmp}/sim.yaml`;
    await Deno.writeTextFile(sim, simProviderYaml());
    const port = freePort();
    const configPath = `${tmp}/runtime.yaml`;
    await Deno.writeTextFile(
      configPath,
      runtimeYaml({
        providerCount: providers,
        port,
        providerCmd: defaults.provider,
        simConfigPath: sim,
        pollIntervalMs: 100,
        dataDir: `${tmp}/data`,
      }),
    );
    const rt = await RuntimeProcess.start({
      cmd: inspected,
      configPath,
      port,
      expectedProviders: providers,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    let head: ProfileNode;
    /** Device polls the runtime counted in the window (GET /metrics); null if it could not say. */
    let counted: number | null = null;
    try {
      await new Promise((r) => setTimeout(r, Number(values.warm) * 1000));
      const session = await inspector(inspectPort);
      try {
        await session.send("HeapProfiler.enable");
        // Read outside the window: the request's own allocations are not the poll path's.
        const pollsBefore = await pollsDone(port);
        await session.send("HeapProfiler.startSampling", {
          samplingInterval: SAMPLING_INTERVAL_BYTES,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
        await new Promise((r) => setTimeout(r, secs * 1000));
        const result = await session.send("HeapProfiler.stopSampling") as {
          profile: { head: ProfileNode };
        };
        const pollsAfter = await pollsDone(port);
        head = result.profile.head;
        if (pollsBefore !== null && pollsAfter !== null) counted = pollsAfter - pollsBefore;
      } finally {
        session.close();
      }
    } finally {
      await rt.stop();
    }
    // The polls made, not the polls due: on a loaded machine a cycle that overruns its interval
    // skips grid instants, and dividing by the polls due would credit the fewer polls' savings to
    // the code.
    const due = providers * DEVICES_PER_PROVIDER * POLLS_PER_SECOND * secs;
    const polls = counted ?? due;
    const self = new Map<string, number>();
    const stacks = new Map<string, number>();
    let total = 0;
    const walk = (n: ProfileNode, path: string[]) => {
      const name = frameName(n);
      const here = [...path, name];
      if (n.selfSize > 0) {
        total += n.selfSize;
        self.set(name, (self.get(name) ?? 0) + n.selfSize);
        const key = here.slice(-5).reverse().join(" < ");
        stacks.set(key, (stacks.get(key) ?? 0) + n.selfSize);
      }
      for (const c of n.children) walk(c, here);
    };
    walk(head, []);
    const perPoll = (bytes: number) => Math.round(bytes / polls);
    console.log(
      `${providers} providers, ${secs} s after ${values.warm} s: ${
        (total / 1048576).toFixed(1)
      } MiB allocated, ${perPoll(total)} B per device poll (${polls} polls${
        counted === null ? ", as due: /metrics did not say" : `, of ${due} due`
      })`,
    );
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
    for (const [name, bytes] of top) {
      console.log(`${String(perPoll(bytes)).padStart(6)} B  ${name}`);
    }
    if (values.out) {
      await Deno.writeTextFile(
        values.out,
        JSON.stringify(
          {
            cmd: inspected,
            providers,
            secs,
            polls,
            pollsDue: due,
            bytesPerPoll: perPoll(total),
            functions: top.map(([name, bytes]) => ({ name, bytesPerPoll: perPoll(bytes) })),
            stacks: [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 40).map(([stack, bytes]) => ({
              stack,
              bytesPerPoll: perPoll(bytes),
            })),
          },
          null,
          2,
        ) + "\n",
      );
    }
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main();
