import type { UnknownField } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';

/**
 * A `repeated bytes` field of a response already in wire form, for results of thousands of BSON documents
 * (TabularDataBySQL `raw_data`). protobuf-es writes such a field one element at a time into a buffer that
 * starts small and doubles, then copies it out: for a one-day query (5,556 documents, 2.9 MB) that is
 * several ms and a dozen large garbage buffers per response, where laying the elements out once is
 * ~0.3 ms.
 *
 * The elements go into ONE unknown field of the message. protobuf-es writes unknown fields verbatim after
 * its tag (`tag(no, LengthDelimited)` + `data`), so `data` holds the first element's length and bytes, then
 * tag, length and bytes of every further element: byte for byte what encoding the field would give, and
 * what every decoder reads back as the repeated field. The message must leave the field itself empty.
 */
export function encodedRepeatedBytes(fieldNumber: number, elements: readonly Uint8Array[]): UnknownField[] {
  if (elements.length === 0) return [];
  if (!Number.isInteger(fieldNumber) || fieldNumber < 1 || fieldNumber > 15) {
    // One tag byte: field numbers 1-15 (enough for the responses this serves).
    throw new RangeError(`fieldNumber: must be an integer from 1 to 15 (got ${fieldNumber})`);
  }
  const tag = (fieldNumber << 3) | WireType.LengthDelimited;
  let size = -1; // the first element's tag is written by protobuf-es
  for (const element of elements) size += 1 + varintLength(element.length) + element.length;
  const data = new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < elements.length; i++) {
    const element = elements[i] as Uint8Array;
    if (i > 0) data[at++] = tag;
    let length = element.length;
    while (length >= 0x80) {
      data[at++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    data[at++] = length;
    data.set(element, at);
    at += element.length;
  }
  return [{ no: fieldNumber, wireType: WireType.LengthDelimited, data }];
}

function varintLength(value: number): number {
  let bytes = 1;
  for (let rest = value >>> 7; rest > 0; rest >>>= 7) bytes += 1;
  return bytes;
}
