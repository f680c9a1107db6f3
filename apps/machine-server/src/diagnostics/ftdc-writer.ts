/**
 * FTDC files (A6): a sequence of documents. A schema document is byte 0x01 + JSON array of the metric
 * names + `\n`; a metric document starts with a byte whose lowest bit is 0, followed by one "diff bit"
 * per schema field (packed after the marker bit, padded to whole bytes), a big-endian int64 Unix time
 * (seconds) and big-endian float32 values only for fields whose bit is set (the first document after
 * a schema diffs against zeros). Each new file starts with a schema document; files roll over at
 * `maxFileBytes` (10 MB; never twice within one second, since the name has second resolution) and only
 * the newest `maxFiles` (20) are kept. Directory mode 0755, file mode 0644 (whatever the umask).
 */
import { appendFile, chmod, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

export interface FtdcWriterOptions {
  readonly directory: string;
  readonly maxFileBytes?: number;
  readonly maxFiles?: number;
}

export interface FtdcWriter {
  write(at: Date, metrics: Record<string, number>): Promise<void>;
  /** The file being appended to (not complete: the uploader leaves it alone). */
  currentFile(): string | undefined;
}

/** `machine-server-YYYY-MM-DDTHH-MM-SSZ.ftdc` (UTC). */
export function ftdcFileName(at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
  return `machine-server-${stamp}.ftdc`;
}

export function createFtdcWriter(options: FtdcWriterOptions): FtdcWriter {
  const maxFileBytes = options.maxFileBytes ?? 10 * 1024 * 1024;
  const maxFiles = options.maxFiles ?? 20;
  let file: string | undefined;
  let size = 0;
  let schema: string[] = [];
  let previous: number[] = [];

  const openNew = async (at: Date) => {
    const created = await mkdir(options.directory, { recursive: true, mode: 0o755 });
    if (created !== undefined) await chmod(options.directory, 0o755);
    const name = ftdcFileName(at);
    // Retention first, so that there are never more than `maxFiles` files, the new one included.
    const others = (await readdir(options.directory))
      .filter((entry) => entry.endsWith('.ftdc') && entry !== name)
      .sort();
    for (const old of others.slice(0, Math.max(0, others.length - (maxFiles - 1)))) {
      await rm(path.join(options.directory, old), { force: true });
    }
    file = path.join(options.directory, name);
    size = (await stat(file).catch(() => undefined))?.size ?? 0;
    if (size === 0) {
      await appendFile(file, '', { mode: 0o644 });
      await chmod(file, 0o644);
    }
    schema = [];
  };

  return {
    currentFile: () => file,
    async write(at, metrics) {
      if (!file || (size >= maxFileBytes && path.join(options.directory, ftdcFileName(at)) !== file))
        await openNew(at);
      const names = Object.keys(metrics).sort();
      const chunks: Buffer[] = [];
      if (names.join('\n') !== schema.join('\n')) {
        schema = names;
        previous = names.map(() => 0);
        chunks.push(
          Buffer.concat([Buffer.from([0x01]), Buffer.from(JSON.stringify(names)), Buffer.from('\n')]),
        );
      }
      const values = names.map((name) => Math.fround(metrics[name] ?? 0));
      const bits = new Uint8Array(Math.ceil((names.length + 1) / 8));
      const changed: number[] = [];
      values.forEach((value, index) => {
        if (value !== previous[index]) {
          const bit = index + 1;
          bits[bit >> 3] = (bits[bit >> 3] as number) | (1 << (bit & 7));
          changed.push(value);
        }
      });
      const time = Buffer.alloc(8);
      time.writeBigInt64BE(BigInt(Math.floor(at.getTime() / 1000)));
      const floats = Buffer.alloc(changed.length * 4);
      for (const [index, value] of changed.entries()) floats.writeFloatBE(value, index * 4);
      chunks.push(Buffer.from(bits), time, floats);
      previous = values;
      const bytes = Buffer.concat(chunks);
      await appendFile(file as string, bytes, { mode: 0o644 });
      size += bytes.length;
    },
  };
}
