/**
 * The local copy of the last cloud config (A1.4): `$VIAM_HOME/cached_cloud_config_<partID>.json`,
 * the unprocessed JSON as received (2-space indent). Written atomically (temp file in the same
 * directory + rename) with mode 0600, or the permissions the existing file had. Read only at start-up
 * when the cloud cannot be reached; an unreadable cache is deleted.
 */
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { JsonObject } from '../json.ts';

export interface ConfigCache {
  readonly path: string;
  exists(): Promise<boolean>;
  read(): Promise<{ json: JsonObject; modifiedAt: Date } | undefined>;
  write(json: JsonObject): Promise<void>;
  remove(): Promise<void>;
}

export function createConfigCache(viamHome: string, partId: string): ConfigCache {
  const file = path.join(viamHome, `cached_cloud_config_${partId.replace(/[^\w-]/g, '_')}.json`);
  return {
    path: file,
    async exists() {
      return (await stat(file).catch(() => undefined)) !== undefined;
    },
    async read() {
      let text: string;
      let modifiedAt: Date;
      try {
        text = await readFile(file, 'utf8');
        modifiedAt = (await stat(file)).mtime;
      } catch {
        return undefined;
      }
      const json = JSON.parse(text) as JsonObject;
      return { json, modifiedAt };
    },
    async write(json) {
      await mkdir(viamHome, { recursive: true, mode: 0o700 });
      const existing = await stat(file).catch(() => undefined);
      const mode = existing ? existing.mode & 0o777 : 0o600;
      const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
      try {
        await writeFile(temp, `${JSON.stringify(json, null, 2)}\n`, { mode });
        await chmod(temp, mode);
        await rename(temp, file);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
    },
    async remove() {
      await rm(file, { force: true });
    },
  };
}
