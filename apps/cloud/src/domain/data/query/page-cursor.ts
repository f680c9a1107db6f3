import { invalidArgument } from '../../errors.ts';
import type { EpochMicros } from './data-filter.ts';

/**
 * Keyset cursor for `last`: the (captured_at, id) of the last item returned, opaque to clients
 * (base64url of `<kind>1:<micros>:<id>`). Tabular and binary cursors are not interchangeable.
 */
export interface PageCursor {
  capturedAt: EpochMicros;
  id: string;
}

export type CursorKind = 'tabular' | 'binary';

const prefixOf: Record<CursorKind, string> = { tabular: 't1', binary: 'b1' };
const idPattern: Record<CursorKind, RegExp> = { tabular: /^\d{1,19}$/, binary: /^[A-Za-z0-9_/-]{1,400}$/ };

export function encodeCursor(kind: CursorKind, cursor: PageCursor): string {
  return Buffer.from(`${prefixOf[kind]}:${cursor.capturedAt}:${cursor.id}`, 'utf8').toString('base64url');
}

/** Decodes `last`; an empty string is "from the start", anything not issued by us is InvalidArgument. */
export function decodeCursor(
  kind: CursorKind,
  last: string,
  field = 'data_request.last',
): PageCursor | undefined {
  if (last === '') return undefined;
  const invalid = () =>
    invalidArgument(
      field,
      'is not a cursor returned by this RPC (pass the `last` of the previous response, or empty)',
      last,
    );
  if (last.length > 700 || !/^[A-Za-z0-9_-]+$/.test(last)) throw invalid();
  const [prefix, micros, id, ...rest] = Buffer.from(last, 'base64url').toString('utf8').split(':');
  if (rest.length || prefix !== prefixOf[kind] || !micros || !id) throw invalid();
  if (!/^-?\d{1,18}$/.test(micros) || !idPattern[kind].test(id)) throw invalid();
  return { capturedAt: BigInt(micros), id };
}
