/**
 * Local tarball modules (machine-runtime.md A3.1): `executable_path` ending in `.tar.gz` / `.tgz` is
 * unpacked (system `tar`) into `$VIAM_HOME/packages/local/module/<module name>` and the executable is
 * the `entrypoint` of its `meta.json` (required; it must stay inside the unpacked directory). The
 * tarball is unpacked again only when its size or modification time changed; a fresh unpack removes
 * the first-run marker so `first_run` runs for the new contents.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { ModuleConfig } from '../config/machine-config.ts';
import { errorMessage, invalidConfig } from '../errors.ts';
import { firstRunMarkerPath } from './first-run.ts';

export interface UnpackedModule {
  /** The unpacked directory (VIAM_MODULE_ROOT, working directory). */
  readonly root: string;
  readonly executable: string;
}

export function isTarballPath(path: string): boolean {
  return /\.(tar\.gz|tgz)$/.test(path);
}

export async function unpackLocalTarball(
  config: ModuleConfig,
  tarball: string,
  viamHome: string,
  signal: AbortSignal,
): Promise<UnpackedModule> {
  const field = `${config.path}.executable_path`;
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(tarball);
  } catch {
    throw invalidConfig(field, 'does not exist', config.executablePath);
  }
  const root = join(viamHome, 'packages', 'local', 'module', config.name);
  const stampPath = `${root}.unpacked-from`;
  const stamp = `${tarball}\n${info.size}\n${info.mtimeMs}`;
  const previous = await readFile(stampPath, 'utf8').catch(() => '');
  if (previous !== stamp) {
    await rm(root, { recursive: true, force: true });
    await rm(firstRunMarkerPath(root), { force: true });
    await mkdir(root, { recursive: true, mode: 0o755 });
    const failure = await runTar(tarball, root, signal);
    if (failure) throw invalidConfig(field, `cannot unpack the tarball: ${failure}`, config.executablePath);
    await writeFile(stampPath, stamp);
  }
  return { root, executable: await entrypointOf(config, root) };
}

async function entrypointOf(config: ModuleConfig, root: string): Promise<string> {
  const field = `${config.path}.executable_path`;
  let meta: unknown;
  try {
    meta = JSON.parse(await readFile(join(root, 'meta.json'), 'utf8'));
  } catch (error) {
    throw invalidConfig(
      field,
      `a local tarball module needs a meta.json with an entrypoint (${errorMessage(error)})`,
    );
  }
  const entrypoint = (meta as { entrypoint?: unknown } | null)?.entrypoint;
  if (typeof entrypoint !== 'string' || entrypoint === '') {
    throw invalidConfig(field, 'meta.json of the tarball has no "entrypoint"', entrypoint ?? null);
  }
  const executable = resolve(root, entrypoint);
  const inside = relative(root, executable);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    throw invalidConfig(field, 'meta.json entrypoint is outside the unpacked module', entrypoint);
  }
  return executable;
}

function runTar(tarball: string, into: string, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolveRun) => {
    const child = spawn('tar', ['-xzf', tarball, '-C', into, '--no-same-owner'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      signal,
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 500) stderr += chunk.toString('utf8');
    });
    child.once('error', (error) => resolveRun(`tar failed: ${error.message}`));
    child.once('exit', (code) =>
      resolveRun(code === 0 ? undefined : `tar exit code ${code}: ${stderr.trim()}`),
    );
  });
}
