/**
 * Build of @mcloud/protocol: extract `.proto` from the pinned SDK into proto/, add proto-extra/, then
 * `buf generate` protobuf-es v2 code (js + d.ts) into gen/. Runs on every `npm ci`.
 */
import { spawnSync } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { packageRoot } from './extract/package-root.ts';
import { extractProtos } from './extract-protos.ts';

const packageDir = dirname(import.meta.dirname);
const protoDir = join(packageDir, 'proto');
const genDir = join(packageDir, 'gen');
const started = performance.now();

const extracted = await extractProtos(protoDir);
// proto-extra/: published Viam protos the SDK does not ship (viam.module.v1), committed sources that
// import extracted files, so they are generated together with them under their upstream paths.
await cp(join(packageDir, 'proto-extra'), protoDir, { recursive: true });

const bufBin = join(packageRoot('@bufbuild/buf', packageDir), 'bin', 'buf');
const pluginBinDir = join(packageRoot('@bufbuild/protoc-gen-es', packageDir), 'bin');

await rm(genDir, { recursive: true, force: true });
// proto/: extracted from the SDK; proto-own/: Machine Cloud's own services (committed sources).
for (const input of ['proto', 'proto-own']) {
  const buf = spawnSync(process.execPath, [bufBin, 'generate', input, '--template', 'buf.gen.yaml'], {
    cwd: packageDir,
    stdio: ['ignore', 'inherit', 'inherit'],
    // protoc-gen-es is a `#!/usr/bin/env node` script: found on PATH, run by this Node.
    env: {
      ...process.env,
      PATH: [dirname(process.execPath), pluginBinDir, process.env.PATH].join(delimiter),
    },
  });
  if (buf.error) throw buf.error;
  if (buf.status !== 0) {
    console.error(`@mcloud/protocol: buf generate ${input} failed (exit ${buf.status})`);
    process.exit(1);
  }
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `@mcloud/protocol: ${extracted.files} proto files (${extracted.messages} messages, ${extracted.enums} enums, ` +
    `${extracted.services} services) extracted and generated in ${seconds}s`,
);
