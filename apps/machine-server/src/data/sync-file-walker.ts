/**
 * Which files a sync pass takes (machine-runtime.md A5.4): under the capture directory and every
 * additional sync path, skipping directories named `failed` and `datasetUpload`; `.capture` files are
 * always ready, `.prog` files never; any other file is "arbitrary" and ready once it is non-empty and
 * unmodified for `file_last_modified_millis`. Symbolic links are not followed.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { isCaptureFile, isInProgressFile, skippedDirNames } from './capture-paths.ts';

export interface SyncCandidate {
  readonly path: string;
  /** The walked root the file was found under (its `failed/` directory receives terminal failures). */
  readonly root: string;
  readonly kind: 'capture' | 'arbitrary';
}

export interface WalkOptions {
  readonly roots: readonly string[];
  readonly fileLastModifiedMs: number;
  readonly nowMs: number;
  readonly signal?: AbortSignal;
}

/** Files ready to upload, in lexical order per directory (oldest capture files first). */
export async function findFilesToSync(options: WalkOptions): Promise<SyncCandidate[]> {
  const found: SyncCandidate[] = [];
  const seen = new Set<string>();
  for (const root of options.roots) {
    await walkDir(
      root,
      async (filePath, entry) => {
        if (seen.has(filePath)) return;
        seen.add(filePath);
        if (isCaptureFile(entry.name)) {
          found.push({ path: filePath, root, kind: 'capture' });
          return;
        }
        if (isInProgressFile(entry.name)) return;
        const info = await stat(filePath).catch(() => undefined);
        if (!info || info.size === 0 || options.nowMs - info.mtimeMs < options.fileLastModifiedMs) return;
        found.push({ path: filePath, root, kind: 'arbitrary' });
      },
      options.signal,
    );
  }
  return found;
}

/**
 * Calls `visit` for every regular file under `root` (sorted per directory), skipping `failed/` and
 * `datasetUpload/` unless `includeSkipped`.
 */
export async function walkDir(
  root: string,
  visit: (filePath: string, entry: Dirent) => Promise<void> | void,
  signal?: AbortSignal,
  options: { includeSkipped?: boolean } = {},
): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return;
    throw error;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    signal?.throwIfAborted();
    const entryPath = path.join(root, entry.name);
    if (entry.isDirectory()) {
      if (options.includeSkipped || !skippedDirNames.has(entry.name))
        await walkDir(entryPath, visit, signal, options);
    } else if (entry.isFile()) {
      await visit(entryPath, entry);
    }
  }
}
