/**
 * The disk-full deletion policy (machine-runtime.md A5.5): when the file system holding the capture
 * directory is at least `disk_usage_deletion_threshold` full AND the capture directory occupies at least
 * `capture_dir_deletion_threshold` of the file system, every n-th completed capture file (1st, n+1-th,
 * …, walking in lexical = oldest-first order) is deleted, skipping files being uploaded. When the disk is
 * full but the capture directory is below its share, nothing is deleted and a warning says so.
 */
import { lstat, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import { isCaptureFile, skippedDirNames } from './capture-paths.ts';
import { walkDir } from './sync-file-walker.ts';

export interface FileSystemUsage {
  readonly sizeBytes: number;
  /** Fraction of the file system in use (1 − available/total, as the reference computes it). */
  readonly usedFraction: number;
}

export interface DeletionPolicyOptions {
  readonly captureDir: string;
  readonly diskUsageDeletionThreshold: number;
  readonly captureDirDeletionThreshold: number;
  readonly deleteEveryNth: number;
  readonly isUploading: (filePath: string) => boolean;
  readonly logger: Logger;
  /** Defaults to statfs(2) of the capture directory. */
  readonly fileSystemUsage?: (dir: string) => Promise<FileSystemUsage>;
}

export interface DeletionPolicyResult {
  readonly action: 'none' | 'below-share' | 'deleted';
  readonly deletedFiles: number;
  readonly usedFraction: number;
  readonly captureDirBytes: number;
}

export async function statFileSystemUsage(dir: string): Promise<FileSystemUsage> {
  const stats = await statfs(dir);
  return {
    sizeBytes: stats.blocks * stats.bsize,
    usedFraction: stats.blocks === 0 ? 0 : 1 - stats.bavail / stats.blocks,
  };
}

/** One check of the policy (the data manager runs it every 30 s while capture is enabled). */
export async function applyDeletionPolicy(options: DeletionPolicyOptions): Promise<DeletionPolicyResult> {
  let usage: FileSystemUsage;
  try {
    usage = await (options.fileSystemUsage ?? statFileSystemUsage)(options.captureDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { action: 'none', deletedFiles: 0, usedFraction: 0, captureDirBytes: 0 };
    }
    throw error;
  }
  if (usage.usedFraction < options.diskUsageDeletionThreshold) {
    return { action: 'none', deletedFiles: 0, usedFraction: usage.usedFraction, captureDirBytes: 0 };
  }
  const captureFiles: string[] = [];
  let captureDirBytes = 0;
  // Everything under the capture directory counts towards its size (failed/ too); only completed
  // capture files outside failed/ and datasetUpload/ are candidates for deletion.
  await walkDir(
    options.captureDir,
    async (filePath, entry) => {
      const info = await lstat(filePath).catch(() => undefined);
      if (!info) return;
      captureDirBytes += info.size;
      if (isCaptureFile(entry.name) && !isUnderSkippedDir(options.captureDir, filePath))
        captureFiles.push(filePath);
    },
    undefined,
    { includeSkipped: true },
  );
  if (captureDirBytes < options.captureDirDeletionThreshold * usage.sizeBytes) {
    options.logger.warn(
      `Disk nearing capacity but data capture directory is below ${options.captureDirDeletionThreshold} of the file system; file deletion will not run`,
      { usedFraction: usage.usedFraction, captureDirBytes, captureDir: options.captureDir },
    );
    return { action: 'below-share', deletedFiles: 0, usedFraction: usage.usedFraction, captureDirBytes };
  }
  let deletedFiles = 0;
  for (let index = 0; index < captureFiles.length; index++) {
    if (index % options.deleteEveryNth !== 0) continue;
    const filePath = captureFiles[index] as string;
    if (options.isUploading(filePath)) continue;
    await rm(filePath, { force: true });
    deletedFiles++;
  }
  options.logger.warn('disk nearing capacity: deleted capture files', {
    deletedFiles,
    everyNth: options.deleteEveryNth,
    usedFraction: usage.usedFraction,
    captureDir: options.captureDir,
  });
  return { action: 'deleted', deletedFiles, usedFraction: usage.usedFraction, captureDirBytes };
}

function isUnderSkippedDir(root: string, filePath: string): boolean {
  return path
    .relative(root, path.dirname(filePath))
    .split(path.sep)
    .some((segment) => skippedDirNames.has(segment));
}
