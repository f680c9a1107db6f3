#!/usr/bin/env node
/**
 * The `machine-server` executable: turns on Node's module compile cache, then runs
 * `machine-server.ts` (the program itself). Plain JavaScript on purpose: Node strips the types of every
 * .ts file at each start (a WebAssembly stripper: ~17 MiB of RSS and ~150 ms of CPU once loaded), and the
 * compile cache, which also keeps the stripped source and V8's code cache of every module, only covers
 * files loaded after it is on. A .ts launcher would load the stripper on every start.
 *
 * The cache lives in `$VIAM_HOME/compile-cache` (default `~/.viam`), which survives reboots (unlike
 * /tmp); entries are keyed by file content and the Node version, so an upgrade only recompiles what
 * changed (the directory of an older Node is removed). Node writes it at exit. `NODE_COMPILE_CACHE=dir`
 * (set by the user) takes precedence and `NODE_DISABLE_COMPILE_CACHE=1` turns it off. Measured
 * (bench/README.md, machine-startup): a restart with a warm cache reaches "ready" with 50 resources in
 * 281 vs 479 ms without it, and idles with ~20 MiB less RSS.
 */
import { mkdirSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { constants, enableCompileCache, getCompileCacheDir } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';

// The same VIAM_HOME as the command line parser (cli/machine-server-flags.ts), created owner-only as
// the program itself does; a failure here only means no cache (the program reports the real problem).
const viamHome = process.env.VIAM_HOME || path.join(process.env.HOME ?? homedir(), '.viam');
const cacheRoot = path.join(viamHome, 'compile-cache');
try {
  mkdirSync(viamHome, { recursive: true, mode: 0o700 });
  const { status } = enableCompileCache(cacheRoot);
  const inUse = getCompileCacheDir();
  if (status === constants.compileCacheStatus.ENABLED && inUse) void removeStaleCaches(inUse);
} catch {
  // no cache: start as before
}

/**
 * Node keeps one subdirectory per Node version and V8 flag set (`v24.21.0-x64-964aae3f-0`): after an
 * upgrade the old one (~3 MB) would stay forever. Removes the siblings of the one in use, in the
 * background (`modules/` holds the module processes' caches).
 */
async function removeStaleCaches(inUseDir) {
  const current = path.basename(inUseDir);
  const entries = await readdir(cacheRoot).catch(() => []);
  for (const entry of entries) {
    if (entry !== current && /^v\d/.test(entry)) {
      await rm(path.join(cacheRoot, entry), { recursive: true, force: true }).catch(() => {});
    }
  }
}

await import('./machine-server.ts');
