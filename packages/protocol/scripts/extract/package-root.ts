import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * Directory of an installed package as Node would find it from `fromDir`, without relying on
 * its `exports` (several of our tool packages do not export `package.json` or a main entry).
 */
export function packageRoot(name: string, fromDir: string): string {
  const require = createRequire(join(fromDir, 'noop.js'));
  for (const nodeModules of require.resolve.paths(name) ?? []) {
    const candidate = join(nodeModules, name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
  }
  throw new Error(`package ${name} is not installed (looked from ${fromDir})`);
}
