/**
 * console/uplot.js and console/uplot.css are the pinned `uplot` package's files (deno task
 * vendor:uplot): its licence as a header, the file unchanged, and (the script) one `export default`
 * added; and the script is a module that hands the console uPlot's constructor.
 */
import assert from "node:assert/strict";
import {
  pinnedUplotSpecifier,
  UPLOT_CSS,
  UPLOT_JS,
  vendoredUplot,
} from "../../scripts/vendor_uplot.ts";
import { npmPackageDir } from "../../scripts/vendor_yaml.ts";

Deno.test("console/uplot.js and uplot.css are the pinned uplot package's files (deno task vendor:uplot)", async () => {
  const spec = await pinnedUplotSpecifier();
  const pkgDir = await npmPackageDir(spec);
  const expected = await vendoredUplot(spec, pkgDir);
  const js = await Deno.readTextFile(UPLOT_JS);
  const css = await Deno.readTextFile(UPLOT_CSS);
  assert.ok(
    js === expected.js,
    `console/uplot.js differs from ${spec}: run deno task vendor:uplot`,
  );
  assert.ok(
    css === expected.css,
    `console/uplot.css differs from ${spec}: run deno task vendor:uplot`,
  );
  // The package's own bytes are inside, unchanged, and its licence is kept.
  assert.ok(js.includes((await Deno.readTextFile(`${pkgDir}/dist/uPlot.iife.min.js`)).trimEnd()));
  assert.ok(js.includes("Permission is hereby granted, free of charge"));
  assert.ok(css.includes("Copyright (c) 2022 Leon Sorokin"));
});

Deno.test("vendoredUplot refuses a package whose script is not the IIFE build", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uplot-pkg-" });
  try {
    await Deno.mkdir(`${dir}/dist`);
    await Deno.writeTextFile(`${dir}/LICENSE`, "MIT");
    await Deno.writeTextFile(`${dir}/dist/uPlot.iife.min.js`, "export default function(){}");
    await Deno.writeTextFile(`${dir}/dist/uPlot.min.css`, ".uplot{}");
    await assert.rejects(
      vendoredUplot("npm:uplot@9.9.9", dir),
      /dist\/uPlot\.iife\.min\.js: does not begin with `var uPlot=`/,
    );
    await Deno.writeTextFile(`${dir}/dist/uPlot.iife.min.js`, "var uPlot=function(){}();");
    await Deno.writeTextFile(`${dir}/LICENSE`, "a */ b");
    await assert.rejects(vendoredUplot("npm:uplot@9.9.9", dir), /contains \*\//);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
