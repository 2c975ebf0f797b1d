// sizes.ts — byte sizes written for people ("512M", "4G", "64KiB") parsed to and from numbers.

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 2 ** 10,
  kb: 2 ** 10,
  kib: 2 ** 10,
  m: 2 ** 20,
  mb: 2 ** 20,
  mib: 2 ** 20,
  g: 2 ** 30,
  gb: 2 ** 30,
  gib: 2 ** 30,
  t: 2 ** 40,
  tb: 2 ** 40,
  tib: 2 ** 40,
};

/** Parses a byte size: a number, optionally followed by K, M, G or T (powers of 1024; "KB",
 *  "KiB" and a trailing "B" mean the same). Fractions are allowed when the result is a whole
 *  number of bytes ("1.5G"). Throws an Error saying what is wrong. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (m === null) throw new Error(`not a size: "${text}" (expected e.g. 4096, 512K, 64M, 4G)`);
  const unit = UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) throw new Error(`unknown size unit "${m[2]}" in "${text}" (use K, M, G or T)`);
  const bytes = Number(m[1]) * unit;
  if (!Number.isInteger(bytes)) throw new Error(`"${text}" is not a whole number of bytes`);
  if (!Number.isSafeInteger(bytes)) throw new Error(`"${text}" is too large`);
  return bytes;
}

/** Formats bytes with the largest unit that divides them exactly: 4194304 → "4M". */
export function formatSize(bytes: number): string {
  for (const [suffix, unit] of [
    ['T', 2 ** 40],
    ['G', 2 ** 30],
    ['M', 2 ** 20],
    ['K', 2 ** 10],
  ] as const) {
    if (bytes >= unit && bytes % unit === 0) return `${bytes / unit}${suffix}`;
  }
  return String(bytes);
}
