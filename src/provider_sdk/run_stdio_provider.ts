import type { Logger } from "../common/mod.ts";
import { type ProviderHandler, serveProvider } from "./serve.ts";

/**
 * Serves `handler` on the process's stdin/stdout and exits the process with the loop's exit code
 * (0 on clean stdin EOF, 2 framing, 3 unparseable request, 4 serialise, 5 write failure).
 */
export async function runStdioProvider(handler: ProviderHandler, logger?: Logger): Promise<never> {
  const code = await serveProvider(handler, {
    readable: Deno.stdin.readable,
    writable: Deno.stdout.writable,
    ...(logger === undefined ? {} : { logger }),
  });
  Deno.exit(code);
}
