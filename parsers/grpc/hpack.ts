// hpack.ts — an HPACK decoder (RFC 7541): integer and string literals, the static and dynamic
// tables, every field representation and dynamic table size updates.
import { huffmanDecode } from './hpack-huffman.js';
import { STATIC_TABLE, type HeaderField } from './hpack-static-table.js';

export type { HeaderField } from './hpack-static-table.js';

/** The dynamic table size every HTTP/2 connection starts with (SETTINGS_HEADER_TABLE_SIZE's
 *  initial value, RFC 9113 §6.5.2). */
export const DEFAULT_HEADER_TABLE_BYTES = 4096;

/** Bytes an entry costs in the table beyond its name and value (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

/** Integers larger than this are refused: no index, length or table size is anywhere near it, and
 *  the cap keeps the arithmetic in exact integers. */
const MAX_INTEGER = 0x7fffffff;

/** What decode() produced: the block's fields in order, or why the block is not valid HPACK. */
export type HpackResult = { ok: true; fields: HeaderField[] } | { ok: false; reason: string };

/** Options of a decoder. */
export interface HpackDecoderOptions {
  /** The dynamic table's maximum size at the start (default 4096). */
  initialTableBytes?: number;
  /** The largest size a dynamic table size update may set. The real limit is the decoder's
   *  SETTINGS_HEADER_TABLE_SIZE, which a passive observer may not see; this bounds memory instead
   *  (default 65536). */
  tableBytesLimit?: number;
}

/** Thrown inside the decoder when the block is malformed; decode() turns it into a result. */
class MalformedBlock extends Error {}

/** An HPACK decoder: one per direction of one connection, since the dynamic table is shared by
 *  every header block sent that way. */
export class HpackDecoder {
  /** Dynamic table entries, oldest first from `oldest`; slots before it are evicted. */
  private entries: HeaderField[] = [];
  private oldest = 0;
  private bytes = 0;
  private maxBytes: number;
  private readonly bytesLimit: number;

  constructor(options: HpackDecoderOptions = {}) {
    this.maxBytes = options.initialTableBytes ?? DEFAULT_HEADER_TABLE_BYTES;
    this.bytesLimit = options.tableBytesLimit ?? 65536;
  }

  /** The dynamic table's current size in the RFC's accounting (name + value + 32 per entry). */
  get tableBytes(): number {
    return this.bytes;
  }

  /** The dynamic table's current maximum size. */
  get maxTableBytes(): number {
    return this.maxBytes;
  }

  /** The dynamic table's entries, newest first (the first is index 62). */
  tableEntries(): HeaderField[] {
    return this.entries.slice(this.oldest).reverse();
  }

  /** Decodes one complete header block, updating the dynamic table. After a failure the table is
   *  in an unknown state: every later block of the connection must be treated as undecodable. */
  decode(block: Uint8Array): HpackResult {
    try {
      return { ok: true, fields: this.decodeFields(block) };
    } catch (e) {
      if (e instanceof MalformedBlock) return { ok: false, reason: e.message };
      throw e;
    }
  }

  private decodeFields(block: Uint8Array): HeaderField[] {
    const fields: HeaderField[] = [];
    const cursor = { at: 0 };
    while (cursor.at < block.length) {
      const first = block[cursor.at] ?? 0;
      if (first & 0x80) {
        // §6.1 indexed header field.
        fields.push(this.lookup(readInteger(block, cursor, 7)));
      } else if (first & 0x40) {
        // §6.2.1 literal with incremental indexing: the field enters the dynamic table.
        const field = this.readLiteral(block, cursor, 6);
        this.insert(field);
        fields.push(field);
      } else if (first & 0x20) {
        // §6.3 dynamic table size update: only before the block's first field (§4.2).
        if (fields.length > 0) throw new MalformedBlock('table size update after a header field');
        const size = readInteger(block, cursor, 5);
        if (size > this.bytesLimit) throw new MalformedBlock(`table size update to ${size} exceeds ${this.bytesLimit}`);
        this.maxBytes = size;
        this.evictTo(size);
      } else {
        // §6.2.2 without indexing (0000) and §6.2.3 never indexed (0001): both leave the table alone.
        fields.push(this.readLiteral(block, cursor, 4));
      }
    }
    return fields;
  }

  private readLiteral(block: Uint8Array, cursor: { at: number }, prefixBits: number): HeaderField {
    const nameIndex = readInteger(block, cursor, prefixBits);
    const name = nameIndex === 0 ? readString(block, cursor) : this.lookup(nameIndex)[0];
    return [name, readString(block, cursor)];
  }

  private lookup(index: number): HeaderField {
    if (index === 0) throw new MalformedBlock('index 0');
    const fromStatic = STATIC_TABLE[index - 1];
    if (fromStatic) return fromStatic;
    // Dynamic indices count from the newest entry (§2.3.3).
    const age = index - STATIC_TABLE.length - 1;
    const fromDynamic = age < this.entries.length - this.oldest ? this.entries[this.entries.length - 1 - age] : undefined;
    if (!fromDynamic) throw new MalformedBlock(`index ${index} is past the end of the tables`);
    return fromDynamic;
  }

  private insert(field: HeaderField): void {
    const size = field[0].length + field[1].length + ENTRY_OVERHEAD;
    // §4.4: an entry larger than the table empties it and is not added; that is not an error.
    this.evictTo(Math.max(0, this.maxBytes - size));
    if (size <= this.maxBytes) {
      this.entries.push(field);
      this.bytes += size;
    }
  }

  private evictTo(limit: number): void {
    while (this.bytes > limit) {
      const gone = this.entries[this.oldest];
      if (!gone) break;
      this.bytes -= gone[0].length + gone[1].length + ENTRY_OVERHEAD;
      this.oldest++;
    }
    // Drop evicted slots now and then so eviction stays O(1) amortised without a ring buffer.
    if (this.oldest > 64 && this.oldest * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.oldest);
      this.oldest = 0;
    }
  }
}

/** §5.1: an integer with an N-bit prefix starting in the octet at cursor.at. */
function readInteger(block: Uint8Array, cursor: { at: number }, prefixBits: number): number {
  const mask = (1 << prefixBits) - 1;
  let value = (block[cursor.at++] ?? 0) & mask;
  if (value < mask) return value;
  for (let shift = 0; ; shift += 7) {
    if (cursor.at >= block.length) throw new MalformedBlock('integer runs past the end of the block');
    const octet = block[cursor.at++] ?? 0;
    value += (octet & 0x7f) * 2 ** shift;
    if (value > MAX_INTEGER) throw new MalformedBlock('integer too large');
    if ((octet & 0x80) === 0) return value;
    // Zero continuation octets would keep value small forever; no real integer needs more than 5.
    if (shift >= 28) throw new MalformedBlock('integer has too many octets');
  }
}

/** §5.2: a string literal (H bit, 7-bit-prefix length, then raw or Huffman-coded octets). */
function readString(block: Uint8Array, cursor: { at: number }): string {
  if (cursor.at >= block.length) throw new MalformedBlock('string literal missing');
  const huffman = ((block[cursor.at] ?? 0) & 0x80) !== 0;
  const length = readInteger(block, cursor, 7);
  const start = cursor.at;
  if (length > block.length - start) throw new MalformedBlock('string literal runs past the end of the block');
  cursor.at = start + length;
  // latin1: one character per octet, so lengths stay the RFC's octet counts and no octet is altered.
  if (!huffman) return Buffer.from(block.buffer, block.byteOffset + start, length).toString('latin1');
  const decoded = huffmanDecode(block, start, start + length);
  if (decoded === null) throw new MalformedBlock('invalid Huffman-coded string');
  return decoded;
}
