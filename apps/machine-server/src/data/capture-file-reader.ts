/**
 * Reads completed capture files for upload. Tabular files (a few hundred KiB) are read whole; binary
 * files are read by position so a large payload is never loaded: each reading is located (offset and
 * length of its bytes) and later either read (small) or streamed from disk (large).
 */
import { type FileHandle, open } from 'node:fs/promises';
import { fromBinary } from '@bufbuild/protobuf';
import { dataSyncPb } from '@mcloud/protocol/machine';
import {
  CaptureFileFormatError,
  type CaptureFileMetadata,
  decodeCaptureFile,
  decodeCaptureMetadata,
  msOfTimestamp,
  peekCaptureMetadata,
  readVarint,
  scanTabularCaptureFile,
} from './capture-file-format.ts';

/** A binary reading located in its file. */
export interface LocatedBinaryReading {
  readonly timeRequestedMs: number;
  readonly timeReceivedMs: number;
  /** Absolute byte offset of the payload in the file. */
  readonly offset: number;
  readonly length: number;
  /** The payload itself when the file was small enough to be read whole. */
  readonly bytes?: Uint8Array;
}

export type OpenedCaptureFile =
  | {
      readonly kind: 'tabular';
      readonly metadata: CaptureFileMetadata;
      /** Each reading's size-delimited SensorData bytes (see scanTabularCaptureFile). */
      readonly rawReadings: Uint8Array[];
    }
  | {
      readonly kind: 'binary';
      readonly metadata: CaptureFileMetadata;
      readonly readings: LocatedBinaryReading[];
    };

const windowBytes = 64 * 1024;
/** Binary files up to this size are simply read whole. */
const wholeReadLimitBytes = 4 * 1024 * 1024;

export async function readCaptureFile(filePath: string, signal?: AbortSignal): Promise<OpenedCaptureFile> {
  const handle = await open(filePath, 'r');
  try {
    const { size } = await handle.stat();
    if (size <= wholeReadLimitBytes) {
      const bytes = await handle.readFile(signal ? { signal } : {});
      const header = peekCaptureMetadata(bytes, filePath);
      if (header.dataType === 'tabular')
        return { kind: 'tabular', ...scanTabularCaptureFile(bytes, filePath) };
      const decoded = decodeCaptureFile(bytes, filePath);
      return {
        kind: 'binary',
        metadata: decoded.metadata,
        readings: decoded.readings.map((reading) => {
          const bytes = reading.data.value as Uint8Array;
          return {
            timeRequestedMs: reading.timeRequestedMs,
            timeReceivedMs: reading.timeReceivedMs,
            offset: bytes.byteOffset,
            length: bytes.byteLength,
            bytes,
          };
        }),
      };
    }
    return await locateLargeBinaryFile(handle, size, filePath);
  } finally {
    await handle.close();
  }
}

/** The bytes of a located reading: from memory when the file was small, else read by position. */
export async function payloadOf(filePath: string, reading: LocatedBinaryReading): Promise<Uint8Array> {
  if (reading.bytes) return reading.bytes;
  const handle = await open(filePath, 'r');
  try {
    return await readExactly(handle, reading.offset, reading.length, filePath);
  } finally {
    await handle.close();
  }
}

/** The payload as chunks of at most `chunkBytes`, read from disk one at a time. */
export async function* payloadChunks(
  filePath: string,
  reading: LocatedBinaryReading,
  chunkBytes: number,
): AsyncGenerator<Uint8Array> {
  const cached = reading.bytes;
  if (cached) {
    for (let start = 0; start < cached.byteLength; start += chunkBytes) {
      yield cached.subarray(start, Math.min(cached.byteLength, start + chunkBytes));
    }
    return;
  }
  const handle = await open(filePath, 'r');
  try {
    for (let done = 0; done < reading.length; ) {
      const length = Math.min(chunkBytes, reading.length - done);
      yield await readExactly(handle, reading.offset + done, length, filePath);
      done += length;
    }
  } finally {
    await handle.close();
  }
}

async function readExactly(
  handle: FileHandle,
  position: number,
  length: number,
  filePath: string,
): Promise<Uint8Array> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0)
      throw new CaptureFileFormatError(filePath, `truncated: ends before byte ${position + length}`);
    filled += bytesRead;
  }
  return buffer;
}

/** Varint at an absolute position (reads a small window). */
async function varintAt(handle: FileHandle, position: number, size: number, filePath: string) {
  const window = await readExactly(handle, position, Math.min(10, size - position), filePath);
  const varint = readVarint(window, 0);
  if (!varint)
    throw new CaptureFileFormatError(filePath, `truncated or malformed length at byte ${position}`);
  return { value: varint.value, next: position + varint.next };
}

async function locateLargeBinaryFile(
  handle: FileHandle,
  size: number,
  filePath: string,
): Promise<OpenedCaptureFile> {
  const headerSize = await varintAt(handle, 0, size, filePath);
  if (headerSize.value > windowBytes || headerSize.next + headerSize.value > size) {
    throw new CaptureFileFormatError(filePath, `the header claims ${headerSize.value} bytes`);
  }
  const metadata = decodeCaptureMetadata(
    await readExactly(handle, headerSize.next, headerSize.value, filePath),
    filePath,
  );
  if (metadata.dataType !== 'binary') {
    throw new CaptureFileFormatError(
      filePath,
      `a ${size}-byte tabular file is larger than any the data manager writes`,
    );
  }
  const readings: LocatedBinaryReading[] = [];
  let position = headerSize.next + headerSize.value;
  while (position < size) {
    const messageSize = await varintAt(handle, position, size, filePath);
    const end = messageSize.next + messageSize.value;
    if (end > size)
      throw new CaptureFileFormatError(filePath, `truncated: reading ${readings.length} ends past the file`);
    readings.push(await locateSensorData(handle, messageSize.next, end, filePath, readings.length));
    position = end;
  }
  return { kind: 'binary', metadata, readings };
}

/** Walks the fields of one SensorData in `[start, end)`: metadata (1) decoded, binary (3) located. */
async function locateSensorData(
  handle: FileHandle,
  start: number,
  end: number,
  filePath: string,
  index: number,
): Promise<LocatedBinaryReading> {
  let times = { timeRequestedMs: 0, timeReceivedMs: 0 };
  let payload: { offset: number; length: number } | undefined;
  let position = start;
  while (position < end) {
    const tag = await varintAt(handle, position, end, filePath);
    const field = Math.floor(tag.value / 8);
    const wireType = tag.value % 8;
    if (wireType !== 2) {
      throw new CaptureFileFormatError(
        filePath,
        `reading ${index}: unexpected field ${field} (wire type ${wireType})`,
      );
    }
    const length = await varintAt(handle, tag.next, end, filePath);
    const bodyEnd = length.next + length.value;
    if (bodyEnd > end)
      throw new CaptureFileFormatError(filePath, `reading ${index}: field ${field} overruns the message`);
    if (field === 1) {
      if (length.value > windowBytes)
        throw new CaptureFileFormatError(filePath, `reading ${index}: metadata too large`);
      times = decodeSensorTimes(
        await readExactly(handle, length.next, length.value, filePath),
        filePath,
        index,
      );
    } else if (field === 3) {
      payload = { offset: length.next, length: length.value };
    } else {
      throw new CaptureFileFormatError(
        filePath,
        `reading ${index} carries field ${field}; a binary file needs binary data`,
      );
    }
    position = bodyEnd;
  }
  if (!payload) throw new CaptureFileFormatError(filePath, `reading ${index} carries no binary data`);
  return { ...times, ...payload };
}

function decodeSensorTimes(bytes: Uint8Array, filePath: string, index: number) {
  try {
    const metadata = fromBinary(dataSyncPb.SensorMetadataSchema, bytes);
    return {
      timeRequestedMs: msOfTimestamp(metadata.timeRequested),
      timeReceivedMs: msOfTimestamp(metadata.timeReceived),
    };
  } catch (error) {
    throw new CaptureFileFormatError(filePath, `reading ${index}: metadata is not a SensorMetadata`, {
      cause: error,
    });
  }
}
