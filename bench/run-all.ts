/**
 * `npm run bench`: every benchmark, one at a time (they share the machine with the cloud and
 * PostgreSQL), then bench/README.md is regenerated from bench/results/*.json. Extra arguments are passed
 * to every script (e.g. `npm run bench -- --server-nodelay`).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { renderReadme } from './lib/report.ts';

const scripts = [
  'ingest-tabular.ts',
  'tabular-first-page.ts',
  'streaming-upload.ts',
  'machine-data-capture.ts',
  'machine-startup.ts',
  'machine-reconfigure.ts',
  'machine-config-push.ts',
  'query-sql.ts',
  'pipelines.ts',
];
const extra = process.argv.slice(2);
const failed: string[] = [];
for (const script of scripts) {
  console.log(`\n=== ${script} ${extra.join(' ')}`);
  const began = performance.now();
  const run = spawnSync(process.execPath, [path.join(import.meta.dirname, script), ...extra], {
    stdio: 'inherit',
  });
  console.log(`=== ${script}: exit ${run.status} after ${((performance.now() - began) / 1000).toFixed(0)}s`);
  if (run.status !== 0) failed.push(script);
}
renderReadme();
if (failed.length) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
