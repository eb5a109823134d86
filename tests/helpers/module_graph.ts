/**
 * The module graph of an entry point, as `deno info --json` reports it: what the runtime or a
 * provider loads. Used by the tests that keep a package or module out of a process.
 */
import assert from "node:assert/strict";

interface GraphDependency {
  readonly code?: { readonly specifier: string };
  readonly isDynamic?: boolean;
}

interface GraphModule {
  readonly specifier: string;
  readonly kind?: string;
  readonly npmPackage?: string;
  readonly dependencies?: readonly GraphDependency[];
}

/** An entry point's module graph. */
export class ModuleGraph {
  readonly #roots: readonly string[];
  readonly #modules: readonly GraphModule[];
  readonly #redirects: Readonly<Record<string, string>>;

  private constructor(info: {
    roots: string[];
    modules: GraphModule[];
    redirects: Record<string, string>;
  }) {
    this.#roots = info.roots;
    this.#modules = info.modules;
    this.#redirects = info.redirects;
  }

  /** The graph of `entry`, a path relative to the repository root. */
  static async of(entry: string): Promise<ModuleGraph> {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", new URL(`../../${entry}`, import.meta.url).pathname],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return new ModuleGraph(JSON.parse(new TextDecoder().decode(out.stdout)));
  }

  /** Every module specifier, dynamic imports and type-only packages included. */
  get modules(): string[] {
    return this.#modules.map((m) => m.specifier);
  }

  /**
   * npm packages (`name@version`) in the graph. (`npmPackages` of the JSON lists the whole
   * lockfile snapshot, not the graph: only modules count.)
   */
  get npmPackages(): string[] {
    return this.#modules.filter((m) => m.kind === "npm").map((m) => m.npmPackage ?? "");
  }

  /** The specifier of every code (not type-only) dependency of every module. */
  get codeDependencies(): string[] {
    return this.#modules.flatMap((m) => m.dependencies ?? [])
      .flatMap((d) => d.code ? [d.code.specifier] : []);
  }

  /** The modules with a code dependency (static or dynamic) whose specifier passes `test`. */
  importersOf(test: (specifier: string) => boolean): string[] {
    return this.#modules.filter((m) =>
      (m.dependencies ?? []).some((d) => d.code !== undefined && test(d.code.specifier))
    ).map((m) => m.specifier);
  }

  /** The modules loaded through static imports alone (dynamic imports not followed). */
  get staticModules(): string[] {
    const bySpecifier = new Map(this.#modules.map((m) => [m.specifier, m]));
    const seen = new Set<string>();
    const todo = [...this.#roots];
    while (todo.length > 0) {
      const spec = todo.pop()!;
      const resolved = this.#redirects[spec] ?? spec;
      if (seen.has(resolved)) continue;
      seen.add(resolved);
      for (const d of bySpecifier.get(resolved)?.dependencies ?? []) {
        if (d.code && !d.isDynamic) todo.push(d.code.specifier);
      }
    }
    return [...seen];
  }
}
