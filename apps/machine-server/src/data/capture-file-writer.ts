/**
 * Writes capture files (machine-runtime.md A5.3). A file is written as `<stem>.prog`, synced to disk
 * and only then renamed to `<stem>.capture`; the syncer uploads only `.capture` files, so it never sees
 * a half-written one. Tabular readings are appended to one file until it exceeds the size limit;
 * each binary capture is its own file.
 */
import { access, type FileHandle, mkdir, open, rename } from 'node:fs/promises';
import path from 'node:path';
import {
  type CapturedReading,
  type CaptureFileMetadata,
  encodeCapturedReading,
  encodeCaptureHeader,
} from './capture-file-format.ts';
import { captureFileStem, completedPathOf, dirMode, fileMode, inProgressExtension } from './capture-paths.ts';

/** `.prog` files some writer of this process holds open (start-up recovery leaves them alone). */
export const openInProgressFiles: Set<string> = new Set();

export interface TabularCaptureWriterOptions {
  readonly dir: string;
  readonly metadata: CaptureFileMetadata;
  /** A file is completed once it grows past this size. */
  readonly maxFileSizeBytes: number;
  /** Readings are written to disk in batches of about this many bytes. */
  readonly bufferSizeBytes: number;
  /** Epoch ms for file names. */
  readonly nowMs: () => number;
}

export interface TabularCaptureWriter {
  /** Appends one reading (completes the file when it exceeds the size limit). */
  write(reading: CapturedReading): Promise<void>;
  /** Completes the current file, if any: the next reading starts a new one. */
  flush(): Promise<void>;
  /** Same as flush; the writer may still be used afterwards. */
  close(): Promise<void>;
}

interface OpenFile {
  handle: FileHandle;
  path: string;
  sizeBytes: number;
  pending: Uint8Array[];
  pendingBytes: number;
}

export function createTabularCaptureWriter(options: TabularCaptureWriterOptions): TabularCaptureWriter {
  const header = encodeCaptureHeader(options.metadata);
  let current: OpenFile | undefined;
  // Every operation runs after the previous one (collector writes and syncer flushes interleave).
  let queue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(operation: () => Promise<T>): Promise<T> => {
    const result = queue.then(operation);
    queue = result.catch(() => {});
    return result;
  };

  const writePending = async (file: OpenFile) => {
    if (file.pendingBytes === 0) return;
    const chunk = file.pending.length === 1 ? (file.pending[0] as Uint8Array) : Buffer.concat(file.pending);
    file.pending = [];
    file.pendingBytes = 0;
    await file.handle.write(chunk);
  };

  const complete = async () => {
    const file = current;
    if (!file) return;
    current = undefined;
    try {
      await writePending(file);
      await file.handle.datasync();
    } finally {
      await file.handle.close();
      openInProgressFiles.delete(file.path);
    }
    await rename(file.path, completedPathOf(file.path));
  };

  return {
    write: (reading) =>
      serialized(async () => {
        if (!current) {
          const created = await createInProgressFile(options.dir, options.nowMs());
          current = {
            ...created,
            sizeBytes: header.byteLength,
            pending: [header],
            pendingBytes: header.byteLength,
          };
        }
        const bytes = encodeCapturedReading(reading);
        current.pending.push(bytes);
        current.pendingBytes += bytes.byteLength;
        current.sizeBytes += bytes.byteLength;
        if (current.sizeBytes > options.maxFileSizeBytes) await complete();
        else if (current.pendingBytes >= options.bufferSizeBytes) await writePending(current);
      }),
    flush: () => serialized(complete),
    close: () => serialized(complete),
  };
}

/** Writes one binary capture as its own completed file; returns the `.capture` path. */
export async function writeBinaryCaptureFile(
  dir: string,
  metadata: CaptureFileMetadata,
  reading: CapturedReading,
  nowMs: number,
): Promise<string> {
  const file = await createInProgressFile(dir, nowMs);
  try {
    await file.handle.writev([encodeCaptureHeader(metadata), encodeCapturedReading(reading)]);
    await file.handle.datasync();
  } finally {
    await file.handle.close();
    openInProgressFiles.delete(file.path);
  }
  const completed = completedPathOf(file.path);
  await rename(file.path, completed);
  return completed;
}

/** The last file name used per directory: names only move forward, so lexical order is creation order. */
const lastStems = new Map<string, { ms: number; sequence: number }>();

/**
 * Opens a new `.prog` file named after `nowMs`; a sequence number in the sub-millisecond digits keeps
 * names unique and ordered within one millisecond. Neither the `.prog` nor the `.capture` name may exist.
 */
async function createInProgressFile(
  dir: string,
  nowMs: number,
): Promise<{ handle: FileHandle; path: string }> {
  await mkdir(dir, { recursive: true, mode: dirMode });
  const last = lastStems.get(dir);
  let ms = Math.floor(nowMs);
  let sequence = 0;
  if (last && ms <= last.ms) {
    ms = last.ms;
    sequence = last.sequence + 1;
  }
  for (; ; sequence++) {
    if (sequence >= 1000) {
      ms += 1;
      sequence = 0;
    }
    lastStems.set(dir, { ms, sequence });
    const filePath = path.join(dir, `${captureFileStem(ms, sequence)}${inProgressExtension}`);
    if (await exists(completedPathOf(filePath))) continue;
    try {
      const handle = await open(filePath, 'wx', fileMode);
      openInProgressFiles.add(filePath);
      return { handle, path: filePath };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

async function exists(filePath: string): Promise<boolean> {
  try {
    await access(filePath);
    return true;
  } catch {
    return false;
  }
}
