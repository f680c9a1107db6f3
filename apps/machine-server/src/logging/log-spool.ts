/**
 * The on-disk spool of log entries that could not be uploaded yet (going beyond the reference, which
 * loses them). Entries are appended as JSON lines to numbered segment files (`000000000001.jsonl`, …) of
 * at most one upload batch each; the uploader reads the oldest segment, sends it as one batch and
 * removes it after the cloud acknowledged it. The spool is bounded in bytes: when it grows past the
 * bound the oldest segments are deleted and their entries counted as dropped. It survives restarts:
 * segments left by a previous run are found at open and sent first.
 *
 * All file operations are synchronous: appends are small, and a crash never leaves a half-applied
 * state other than a torn last line, which is skipped when read.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import type { LogEntry } from './log-entry.ts';

export interface LogSpoolOptions {
  readonly directory: string;
  /** Default 64 MiB. */
  readonly maxBytes?: number;
  /** Entries per segment (= per upload batch); default 1000. */
  readonly entriesPerSegment?: number;
}

export interface SpooledBatch {
  readonly segment: number;
  readonly entries: readonly LogEntry[];
}

export interface LogSpool {
  readonly directory: string;
  readonly entryCount: number;
  readonly sizeBytes: number;
  append(entries: readonly LogEntry[]): void;
  /** The oldest segment's entries (the segment is sealed: later appends go to a new one). */
  oldest(): SpooledBatch | undefined;
  /** Deletes a segment after its entries were acknowledged. */
  remove(segment: number): void;
  /** The upload of a segment failed: it may be dropped again to keep the bound. */
  release(segment: number): void;
  /** Entries dropped to keep the bound since the last call. */
  takeDroppedCount(): number;
  close(): void;
}

interface Segment {
  readonly number: number;
  readonly path: string;
  bytes: number;
  entries: number;
}

export const defaultSpoolMaxBytes = 64 * 1024 * 1024;
const segmentPattern = /^(\d{12})\.jsonl$/;

export function openLogSpool(options: LogSpoolOptions): LogSpool {
  const directory = path.resolve(options.directory);
  const maxBytes = options.maxBytes ?? defaultSpoolMaxBytes;
  const entriesPerSegment = options.entriesPerSegment ?? 1000;
  mkdirSync(directory, { recursive: true, mode: 0o700 });

  const segments: Segment[] = readdirSync(directory)
    .map((name) => segmentPattern.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => {
      const file = path.join(directory, match[0]);
      return {
        number: Number(match[1]),
        path: file,
        bytes: statSync(file).size,
        entries: readSegment(file).length,
      };
    })
    .sort((a, b) => a.number - b.number);
  let nextNumber = (segments.at(-1)?.number ?? 0) + 1;
  // Segments of an earlier run are sealed; appends start a new one.
  let active: { segment: Segment; fd: number } | undefined;
  let inFlight: number | undefined;
  let dropped = 0;

  const sealActive = () => {
    if (!active) return;
    closeSync(active.fd);
    active = undefined;
  };

  const deleteSegment = (segment: Segment) => {
    if (active?.segment === segment) sealActive();
    rmSync(segment.path, { force: true });
    segments.splice(segments.indexOf(segment), 1);
  };

  const totalBytes = () => segments.reduce((sum, segment) => sum + segment.bytes, 0);

  const enforceBound = () => {
    let total = totalBytes();
    while (total > maxBytes) {
      const victim = segments.find((segment) => segment.number !== inFlight);
      if (!victim) return;
      total -= victim.bytes;
      dropped += victim.entries;
      deleteSegment(victim);
    }
  };

  return {
    directory,
    get entryCount() {
      return segments.reduce((sum, segment) => sum + segment.entries, 0);
    },
    get sizeBytes() {
      return totalBytes();
    },
    append(entries) {
      for (const entry of entries) {
        if (!active || active.segment.entries >= entriesPerSegment) {
          sealActive();
          const number = nextNumber++;
          const file = path.join(directory, `${String(number).padStart(12, '0')}.jsonl`);
          const segment: Segment = { number, path: file, bytes: 0, entries: 0 };
          segments.push(segment);
          active = { segment, fd: openSync(file, 'a', 0o600) };
        }
        const line = `${JSON.stringify(entry)}\n`;
        writeSync(active.fd, line);
        active.segment.bytes += Buffer.byteLength(line);
        active.segment.entries += 1;
      }
      enforceBound();
    },
    oldest() {
      const segment = segments[0];
      if (!segment) return undefined;
      if (active?.segment === segment) sealActive();
      inFlight = segment.number;
      return { segment: segment.number, entries: readSegment(segment.path) };
    },
    remove(number) {
      if (inFlight === number) inFlight = undefined;
      const segment = segments.find((candidate) => candidate.number === number);
      if (segment) deleteSegment(segment);
    },
    release(number) {
      if (inFlight === number) inFlight = undefined;
    },
    takeDroppedCount() {
      const count = dropped;
      dropped = 0;
      return count;
    },
    close() {
      sealActive();
    },
  };
}

function readSegment(file: string): LogEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const entries: LogEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      entries.push(JSON.parse(line) as LogEntry);
    } catch {
      // A torn last line after a crash: skipped.
    }
  }
  return entries;
}
