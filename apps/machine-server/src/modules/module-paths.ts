/**
 * Where modules live on disk (machine-runtime.md A3.2): the socket directory `viam-module-XXXX`
 * (mode 0777) in the OS temp dir with the parent's `parent.sock`, each module's socket
 * `<dir>/<name>-<5 random letters>.sock` (truncated to 103 characters with a hash suffix), and the
 * module data dir `$VIAM_HOME/module-data/<part id or "local">/<name>` (0750).
 */
import { createHash, randomInt } from 'node:crypto';
import { chmod, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Longest unix socket path that works everywhere (macOS sun_path is 104 bytes with the NUL). */
export const maxSocketPathLength = 103;

export async function createModuleSocketDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'viam-module-'));
  await chmod(dir, 0o777);
  return dir;
}

export function parentSocketPath(dir: string): string {
  return join(dir, 'parent.sock');
}

export function moduleSocketPath(dir: string, moduleName: string, random = randomLetters): string {
  const full = join(dir, `${moduleName}-${random(5)}.sock`);
  if (full.length <= maxSocketPathLength) return full;
  const hash = base32(createHash('sha256').update(moduleName).digest()).slice(0, 5);
  const suffix = `-${hash}-${random(5)}.sock`;
  const room = maxSocketPathLength - join(dir, suffix).length;
  if (room < 1) throw new Error(`module socket directory ${dir} is too long for a unix socket path`);
  return join(dir, `${moduleName.slice(0, room)}${suffix}`);
}

export async function createModuleDataDir(viamHome: string, partId: string | undefined, moduleName: string) {
  const dir = join(viamHome, 'module-data', partId || 'local', moduleName);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  return dir;
}

function randomLetters(count: number): string {
  let text = '';
  for (let i = 0; i < count; i++) text += String.fromCharCode(97 + randomInt(26));
  return text;
}

function base32(bytes: Buffer): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}
