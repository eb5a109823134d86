/**
 * Vendors the uPlot chart library into the operator console (deno task vendor:uplot): the
 * console's trend and incident charts (console/trend.js, console/incidents.js) draw with it.
 *
 * Why a committed copy: the console is embedded in the runtime (scripts/gen_console_assets.ts),
 * the compiled binary reads no file at run time and the page loads nothing from elsewhere (its
 * CSP allows only 'self'). uPlot is small (~22 KB gzip), has no dependencies and builds its DOM
 * with createElement and CSSOM styles (element.style), which the CSP's `style-src 'self'` allows.
 *
 * What: from the version pinned in deno.json (`uplot`), `dist/uPlot.iife.min.js` becomes
 * console/uplot.js (the package's MIT licence as a header comment, the file unchanged, then
 * `export default uPlot;` so the console imports it as a module) and `dist/uPlot.min.css` becomes
 * console/uplot.css (same header). tests/scripts/vendor_uplot_test.ts fails when they differ from
 * the pinned package.
 */

import { npmPackageDir } from "./vendor_yaml.ts";

/** The vendored script and stylesheet. */
export const UPLOT_JS = new URL("../console/uplot.js", import.meta.url);
export const UPLOT_CSS = new URL("../console/uplot.css", import.meta.url);

/** The pinned `npm:uplot@x.y.z` specifier of deno.json's `uplot` entry. */
export async function pinnedUplotSpecifier(): Promise<string> {
  const denoJson = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  ) as { imports: Record<string, string> };
  const spec = denoJson.imports["uplot"];
  if (spec === undefined || !/^npm:uplot@\d+\.\d+\.\d+$/.test(spec)) {
    throw new Error(`deno.json imports["uplot"] must be npm:uplot@x.y.z, got ${spec}`);
  }
  return spec;
}

function header(spec: string, file: string, license: string): string {
  if (license.includes("*/")) throw new Error("uplot LICENSE: contains */, cannot be a comment");
  return `/*! Vendored by \`deno task vendor:uplot\` (scripts/vendor_uplot.ts) from ${
    spec.slice(4)
  }, ${file}. Do not edit.\n\n${license.trimEnd()}\n*/\n`;
}

/** The texts of console/uplot.js and console/uplot.css for the package in `pkgDir`. */
export async function vendoredUplot(
  spec: string,
  pkgDir: string,
): Promise<{ js: string; css: string }> {
  const license = await Deno.readTextFile(`${pkgDir}/LICENSE`);
  const js = await Deno.readTextFile(`${pkgDir}/dist/uPlot.iife.min.js`);
  const css = await Deno.readTextFile(`${pkgDir}/dist/uPlot.min.css`);
  if (!/^(\/\*[^]*?\*\/\s*)?var uPlot=/.test(js)) {
    throw new Error(`${spec} dist/uPlot.iife.min.js: does not begin with \`var uPlot=\``);
  }
  return {
    js: `${
      header(spec, "dist/uPlot.iife.min.js", license)
    }${js.trimEnd()}\nexport default uPlot;\n`,
    css: `${header(spec, "dist/uPlot.min.css", license)}${css.trimEnd()}\n`,
  };
}

if (import.meta.main) {
  const spec = await pinnedUplotSpecifier();
  const { js, css } = await vendoredUplot(spec, await npmPackageDir(spec));
  await Deno.writeTextFile(UPLOT_JS, js);
  await Deno.writeTextFile(UPLOT_CSS, css);
  console.log(`vendored ${spec} into console/uplot.js and console/uplot.css`);
}
