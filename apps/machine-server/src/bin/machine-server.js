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
 * changed. Node writes it at exit. `NODE_COMPILE_CACHE=dir` (set by the user) takes precedence and
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off. Measured (bench/README.md, machine-startup): restart
 * with a warm cache ~300 ms faster to the first log line and 25 MiB less idle RSS.
 */
import { mkdirSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';

// The same VIAM_HOME as the command line parser (cli/machine-server-flags.ts), created owner-only as
// the program itself does; a failure here only means no cache (the program reports the real problem).
const viamHome = process.env.VIAM_HOME || path.join(process.env.HOME ?? homedir(), '.viam');
try {
  mkdirSync(viamHome, { recursive: true, mode: 0o700 });
  enableCompileCache(path.join(viamHome, 'compile-cache'));
} catch {
  // no cache: start as before
}

await import('./machine-server.ts');
