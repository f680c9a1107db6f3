/**
 * The `-log-file` output: lines appended to one file, rotated by size, with a bounded number of backups
 * (going beyond the reference, which never size-rotates). Like the reference, an existing file is
 * rotated away at start-up. A backup is named `<name>-<UTC 2006-01-02T15-04-05.000>.<ext>` next to the
 * file (`machine-server.log` → `machine-server-2026-11-20T23-50-01.123.log`); the oldest backups beyond
 * `maxBackups` are deleted.
 *
 * Lines written in one tick are collected and written together (synchronously, so `close()` loses
 * nothing). A write failure (disk full, file removed) never throws into the caller: it is reported
 * once on stderr and writing is retried with the next line.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

export interface RotatingLogFileOptions {
  readonly path: string;
  /** Rotate before a write would make the file larger than this; default 10 MiB. */
  readonly maxSizeBytes?: number;
  /** Backups kept; default 5. */
  readonly maxBackups?: number;
  /** For backup names; default Date.now. */
  readonly nowMs?: () => number;
  /** Where write failures are reported; default stderr. */
  readonly reportError?: (message: string) => void;
}

export interface RotatingLogFile {
  readonly path: string;
  /** Appends `line` and a newline (buffered until the end of the tick or `flush()`). */
  write(line: string): void;
  flush(): void;
  close(): void;
}

export const defaultLogFileMaxSizeBytes = 10 * 1024 * 1024;
export const defaultLogFileMaxBackups = 5;

export function openRotatingLogFile(options: RotatingLogFileOptions): RotatingLogFile {
  const filePath = path.resolve(options.path);
  const maxSizeBytes = options.maxSizeBytes ?? defaultLogFileMaxSizeBytes;
  const maxBackups = options.maxBackups ?? defaultLogFileMaxBackups;
  const nowMs = options.nowMs ?? Date.now;
  const reportError = options.reportError ?? ((message: string) => process.stderr.write(`${message}\n`));
  const directory = path.dirname(filePath);
  const extension = path.extname(filePath);
  const stem = path.basename(filePath, extension);
  const backupPattern = new RegExp(
    `^${escapeRegExp(stem)}-\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d\\.\\d{3}${escapeRegExp(extension)}$`,
  );

  let fd: number | undefined;
  let sizeBytes = 0;
  let pending: string[] = [];
  let scheduled: NodeJS.Immediate | undefined;
  let closed = false;
  let lastError = '';

  const backupPath = (): string => {
    for (let time = nowMs(); ; time++) {
      const stamp = new Date(time).toISOString().replace(/:/g, '-').replace('Z', '');
      const candidate = path.join(directory, `${stem}-${stamp}${extension}`);
      if (!existsSync(candidate)) return candidate;
    }
  };

  const pruneBackups = () => {
    const backups = readdirSync(directory)
      .filter((name) => backupPattern.test(name))
      .sort();
    for (const name of backups.slice(0, Math.max(0, backups.length - maxBackups))) {
      rmSync(path.join(directory, name), { force: true });
    }
  };

  const openFresh = () => {
    fd = openSync(filePath, 'a', 0o600);
    sizeBytes = statSync(filePath).size;
  };

  const rotate = () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    if (existsSync(filePath)) renameSync(filePath, backupPath());
    pruneBackups();
    openFresh();
  };

  const writeChunk = (chunk: string, bytes: number) => {
    if (fd === undefined) openFresh();
    writeSync(fd as number, chunk);
    sizeBytes += bytes;
  };

  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    try {
      let chunk = '';
      let chunkBytes = 0;
      for (const line of lines) {
        const text = `${line}\n`;
        const bytes = Buffer.byteLength(text);
        if (sizeBytes + chunkBytes + bytes > maxSizeBytes && sizeBytes + chunkBytes > 0) {
          if (chunk) writeChunk(chunk, chunkBytes);
          chunk = '';
          chunkBytes = 0;
          rotate();
        }
        chunk += text;
        chunkBytes += bytes;
      }
      if (chunk) writeChunk(chunk, chunkBytes);
      lastError = '';
    } catch (error) {
      const message = `log file ${filePath}: ${(error as Error).message}`;
      if (message !== lastError) reportError(message);
      lastError = message;
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    }
  };

  mkdirSync(directory, { recursive: true, mode: 0o755 });
  if (existsSync(filePath) && statSync(filePath).size > 0) rotate();
  else openFresh();

  return {
    path: filePath,
    write(line) {
      if (closed) return;
      pending.push(line);
      if (!scheduled) {
        scheduled = setImmediate(flush);
        scheduled.unref();
      }
    },
    flush,
    close() {
      if (closed) return;
      flush();
      closed = true;
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
