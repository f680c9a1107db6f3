/**
 * Start-up recovery of `.prog` files left by a crash or power loss: the whole messages at the start of
 * such a file are kept (truncated to them, then renamed to `.capture` so they sync); a file without a
 * complete header holds nothing to upload and is removed. Files some writer of this process holds
 * open are left alone.
 */
import { open, rename, rm } from 'node:fs/promises';
import type { Logger } from '../logging/logger.ts';
import { decodeCaptureMetadata, splitDelimited } from './capture-file-format.ts';
import { openInProgressFiles } from './capture-file-writer.ts';
import { completedPathOf, isInProgressFile } from './capture-paths.ts';
import { walkDir } from './sync-file-walker.ts';

export interface RecoveryResult {
  /** `.prog` files turned into `.capture` files. */
  readonly recovered: number;
  /** Readings kept across all recovered files. */
  readonly readings: number;
  /** Files removed because not even their header was whole. */
  readonly removed: number;
}

export async function recoverInterruptedCaptureFiles(
  captureDir: string,
  logger: Logger,
): Promise<RecoveryResult> {
  const result = { recovered: 0, readings: 0, removed: 0 };
  for (const filePath of await inProgressFilesUnder(captureDir)) {
    if (openInProgressFiles.has(filePath)) continue;
    try {
      const outcome = await recoverFile(filePath);
      if (outcome === undefined) {
        result.removed++;
        logger.warn('removed an interrupted capture file without a complete header', { file: filePath });
      } else {
        result.recovered++;
        result.readings += outcome;
      }
    } catch (error) {
      logger.warn('could not recover an interrupted capture file', { file: filePath, error });
    }
  }
  if (result.recovered > 0) {
    logger.info('recovered interrupted capture files', {
      files: result.recovered,
      readings: result.readings,
    });
  }
  return result;
}

/** Number of readings kept, or undefined when the file was removed. */
async function recoverFile(filePath: string): Promise<number | undefined> {
  const handle = await open(filePath, 'r+');
  let keep: { bytes: number; readings: number } | undefined;
  try {
    const bytes = await handle.readFile();
    const { messages, complete } = splitDelimited(bytes);
    const [first] = messages;
    if (first) {
      try {
        decodeCaptureMetadata(bytes.subarray(first[0], first[1]), filePath);
        keep = { bytes: complete, readings: messages.length - 1 };
      } catch {
        keep = undefined;
      }
    }
    if (keep && keep.bytes < bytes.length) {
      await handle.truncate(keep.bytes);
      await handle.datasync();
    }
  } finally {
    await handle.close();
  }
  if (!keep) {
    await rm(filePath, { force: true });
    return undefined;
  }
  await rename(filePath, completedPathOf(filePath));
  return keep.readings;
}

async function inProgressFilesUnder(root: string): Promise<string[]> {
  const found: string[] = [];
  await walkDir(root, (filePath, entry) => {
    if (isInProgressFile(entry.name)) found.push(filePath);
  });
  return found;
}
