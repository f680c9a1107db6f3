import { DomainError } from '../../errors.ts';
import {
  createJsonDocumentWriter,
  createRowWriter,
  type ResultField,
  type RowWriter,
} from '../bson/bson-from-postgres.ts';
import { BsonWriter } from '../bson/bson-writer.ts';

/**
 * Turns the rows of a user query into its result while PostgreSQL is still sending them (pg's `row`
 * event): BSON writing overlaps the statement's execution and transfer instead of following it, and no
 * array of all rows is kept. Over a cap (rows, bytes) it stops writing and `finish` reports the cap; the
 * first error of a row (there should be none) is kept and thrown by `finish` as well.
 */

export interface CollectorLimits {
  timeoutMs: number;
  maxRows: number;
  maxBytes: number;
}

export interface CollectedResult {
  documents: Uint8Array[];
  totalBytes: number;
  /** Only for `rowShape: 'json-text'`. */
  jsonTexts?: string[];
}

export interface ResultCollector {
  /** One row as PostgreSQL's text values (rowMode 'array'); `fields` describe the result's columns. */
  add(row: readonly unknown[], fields: readonly ResultField[]): void;
  /** The result, or the DomainError of the cap or time limit the query went over. */
  finish(elapsedMs: number): CollectedResult;
}

export function createResultCollector(
  limits: CollectorLimits,
  rowShape: 'columns' | 'json-document' | 'json-text',
): ResultCollector {
  const documents: Uint8Array[] = [];
  const jsonTexts: string[] = [];
  let writer: BsonWriter | undefined;
  let writeRow: RowWriter | undefined;
  let rows = 0;
  let totalBytes = 0;
  let failure: unknown;

  const tooManyBytes = (suffix: string) =>
    new DomainError(
      'ResourceExhausted',
      `query result exceeds the limit of ${limits.maxBytes} bytes${suffix}`,
    );

  const addRow = (row: readonly unknown[], fields: readonly ResultField[]) => {
    if (rowShape === 'json-text') {
      const text = String(row[0]);
      totalBytes += Buffer.byteLength(text);
      if (totalBytes > limits.maxBytes) throw tooManyBytes('');
      jsonTexts.push(text);
      return;
    }
    if (!writer || !writeRow) {
      writer = new BsonWriter();
      writeRow = rowShape === 'json-document' ? createJsonDocumentWriter() : createRowWriter(fields);
    }
    const bytes = writeRow(writer, row);
    totalBytes += bytes.length;
    if (totalBytes > limits.maxBytes) throw tooManyBytes('; select fewer columns or rows');
    documents.push(bytes);
  };

  return {
    add(row, fields) {
      rows += 1;
      if (failure !== undefined || rows > limits.maxRows) return;
      try {
        addRow(row, fields);
      } catch (error) {
        failure = error;
      }
    },
    finish(elapsedMs) {
      if (elapsedMs > limits.timeoutMs) {
        throw new DomainError('DeadlineExceeded', `query exceeded the time limit of ${limits.timeoutMs} ms`);
      }
      if (rows > limits.maxRows) {
        throw new DomainError(
          'ResourceExhausted',
          `query result exceeds the limit of ${limits.maxRows} rows; add a LIMIT or a narrower filter`,
        );
      }
      if (failure !== undefined) throw failure;
      return rowShape === 'json-text' ? { documents: [], totalBytes, jsonTexts } : { documents, totalBytes };
    },
  };
}
