/** Reads an FTDC file back (machine-runtime.md A6 format), so tests check what the writer produced. */

export interface FtdcSample {
  readonly timeSeconds: number;
  readonly metrics: Record<string, number>;
}

/** Every metric document of `bytes` with its full values (diffs applied); throws on a malformed file. */
export function decodeFtdc(bytes: Uint8Array): FtdcSample[] {
  const buffer = Buffer.from(bytes);
  const samples: FtdcSample[] = [];
  let schema: string[] | undefined;
  let previous: number[] = [];
  let at = 0;
  while (at < buffer.length) {
    if (buffer[at] === 0x01) {
      const newline = buffer.indexOf(0x0a, at);
      if (newline < 0) throw new Error(`schema document at ${at} has no newline`);
      schema = JSON.parse(buffer.subarray(at + 1, newline).toString('utf8')) as string[];
      previous = schema.map(() => 0);
      at = newline + 1;
      continue;
    }
    if (!schema) throw new Error(`metric document at ${at} before any schema document`);
    if (((buffer[at] as number) & 1) !== 0) throw new Error(`document at ${at}: marker bit is not 0`);
    const bitBytes = Math.ceil((schema.length + 1) / 8);
    const bits = buffer.subarray(at, at + bitBytes);
    const timeSeconds = Number(buffer.readBigInt64BE(at + bitBytes));
    at += bitBytes + 8;
    const values = [...previous];
    for (let index = 0; index < schema.length; index++) {
      const bit = index + 1;
      if (((bits[bit >> 3] as number) & (1 << (bit & 7))) !== 0) {
        values[index] = buffer.readFloatBE(at);
        at += 4;
      }
    }
    previous = values;
    const names = schema;
    samples.push({
      timeSeconds,
      metrics: Object.fromEntries(names.map((name, i) => [name, values[i] as number])),
    });
  }
  return samples;
}
