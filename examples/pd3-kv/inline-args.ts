// inline-args.ts — splits an inline command line ("SET k v", what telnet users type) into words the
// way Redis does (sdssplitargs): spaces separate, "double" quotes take \n \r \t \b \a \xHH escapes,
// 'single' quotes take \' only, and a closing quote must be followed by a space or the end.

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]);
const ESCAPES: Readonly<Record<number, number>> = { 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x61: 0x07 };

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** The words of one line (without its line ending), or null for unbalanced quotes. A NUL byte
 *  ends the line, as it does for Redis. */
export function splitInline(line: Uint8Array): Buffer[] | null {
  const nul = line.indexOf(0);
  const end = nul < 0 ? line.length : nul;
  const words: Buffer[] = [];
  let p = 0;
  for (;;) {
    while (p < end && SPACE.has(line[p]!)) p++;
    if (p >= end) return words;
    const word: number[] = [];
    let quote = 0; // 0, '"' or '\''
    for (;;) {
      if (p >= end) {
        if (quote !== 0) return null; // unterminated quotes
        break;
      }
      const c = line[p]!;
      if (quote === 0x22) {
        const h1 = hexValue(line[p + 2]);
        const h2 = hexValue(line[p + 3]);
        if (c === 0x5c && line[p + 1] === 0x78 && p + 3 < end && h1 >= 0 && h2 >= 0) {
          word.push(h1 * 16 + h2);
          p += 4;
        } else if (c === 0x5c && p + 1 < end) {
          const e = line[p + 1]!;
          word.push(ESCAPES[e] ?? e);
          p += 2;
        } else if (c === 0x22) {
          if (p + 1 < end && !SPACE.has(line[p + 1]!)) return null; // closing quote must end the word
          p++;
          break;
        } else {
          word.push(c);
          p++;
        }
      } else if (quote === 0x27) {
        if (c === 0x5c && line[p + 1] === 0x27 && p + 1 < end) {
          word.push(0x27);
          p += 2;
        } else if (c === 0x27) {
          if (p + 1 < end && !SPACE.has(line[p + 1]!)) return null;
          p++;
          break;
        } else {
          word.push(c);
          p++;
        }
      } else if (SPACE.has(c)) {
        break;
      } else if (c === 0x22 || c === 0x27) {
        quote = c;
        p++;
      } else {
        word.push(c);
        p++;
      }
    }
    words.push(Buffer.from(word));
  }
}
