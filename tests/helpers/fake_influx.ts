/** A stand-in InfluxDB on loopback for kernel tests: answers 204 and keeps every written line. */
export class FakeInflux {
  readonly lines: string[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const body = await req.text();
      if (new URL(req.url).pathname === "/api/v2/write") {
        this.lines.push(...body.trimEnd().split("\n"));
      }
      return new Response(null, { status: 204 });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  close(): Promise<void> {
    return this.#server.shutdown();
  }
}
