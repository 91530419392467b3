/**
 * Bundle a node adapter's entry and everything it imports into one CommonJS script, the input of
 * `node --build-snapshot` (harness/prepare/snapshots.py).
 *
 *   node bundle.mjs <entry.mjs> <out.cjs>
 *
 * Prints one JSON line: `{"inputs": [absolute paths], "refused": null}`, or `{"refused": "why"}`
 * when the adapter cannot be bundled faithfully: esbuild fails (for example on a top-level await,
 * which CommonJS cannot express), or a bundled module other than the entry reads `import.meta`
 * (it would be empty in the bundle; the entry's own `import.meta.url` is replaced by the drivers'
 * `process.argv[1]`). Exit status 0 either way, 2 on wrong arguments.
 *
 * Resolution follows Node's: the `node` platform (built-ins stay `require`s), the `import` and
 * `require` conditions of package exports and no others (`conditions: []` drops esbuild's extra
 * `module` condition, which Node does not know), `main` before `module` for packages without
 * exports, no syntax lowering.
 */

import path from 'node:path';

import * as esbuild from 'esbuild';

const [entry, out] = process.argv.slice(2);
if (!entry || !out) {
  process.stderr.write('usage: node bundle.mjs <entry.mjs> <out.cjs>\n');
  process.exit(2);
}
const entryPath = path.resolve(entry);
const workDir = path.dirname(entryPath);

function firstMessage(messages) {
  const [first] = messages;
  if (!first) return 'esbuild failed without a message';
  const where = first.location ? `${first.location.file}:${first.location.line}: ` : '';
  return `${where}${first.text}`;
}

let report;
try {
  const result = await esbuild.build({
    entryPoints: [entryPath],
    absWorkingDir: workDir,
    outfile: path.resolve(out),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    conditions: [],
    mainFields: ['main', 'module'],
    metafile: true,
    logLevel: 'silent',
  });
  const foreign = result.warnings.filter(
    (w) => w.id === 'empty-import-meta' && w.location && path.resolve(workDir, w.location.file) !== entryPath,
  );
  if (foreign.length > 0) {
    report = { refused: `reads import.meta, empty in a bundle: ${firstMessage(foreign)}` };
  } else {
    const inputs = Object.keys(result.metafile.inputs).map((file) => path.resolve(workDir, file));
    report = { inputs, refused: null };
  }
} catch (err) {
  report = { refused: `esbuild: ${err.errors ? firstMessage(err.errors) : String(err?.message ?? err)}` };
}
process.stdout.write(`${JSON.stringify(report)}\n`);
