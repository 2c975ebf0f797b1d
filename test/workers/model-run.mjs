// model-run.mjs — random reads and writes against remote regions, each read checked against a local
// model; plain JS so that worker threads and the TS tests share one implementation.

/** A small seeded PRNG (LCG), so a failing run can be repeated exactly. */
export class Rand {
  /** @param {number} seed */
  constructor(seed) {
    this.state = seed >>> 0;
  }

  /** A whole number in [0, n). @param {number} n @returns {number} */
  int(n) {
    this.state = (Math.imul(this.state, 1664525) + 1013904223) >>> 0;
    return Math.floor((this.state / 2 ** 32) * n);
  }

  /** `size` pseudo-random bytes. @param {number} size @returns {Buffer} */
  bytes(size) {
    const b = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; ++i) b[i] = this.int(256);
    return b;
  }
}

/**
 * @typedef {{ region: number, model: Buffer }} ModelRegion  one remote region and the bytes it must hold
 * @typedef {{ reads: number, writes: number, mismatchCount: number,
 *             mismatches: Array<[number, number, number]> }} ModelRunResult
 *   counts of a run; `mismatches` keeps [region, offset, size] of the first 20 reads that differed
 */

/**
 * Random reads and writes over `regions`, in rounds of `batch` requests issued before any is
 * awaited. Requests issued by one thread to one memory server execute in issue order, so each read
 * must see exactly the model as of its issue — including writes of the same round still in flight
 * (read-after-write). Sizes 1..maxSize; about one request in four starts at a region's first byte
 * or ends at its last.
 * @param {{ read(region: number, offset: number, size: number): Promise<Buffer>,
 *           write(region: number, offset: number, data: Uint8Array): Promise<number> }} host
 * @param {ModelRegion[]} regions
 * @param {number} ops
 * @param {Rand} rand
 * @param {number} [batch]
 * @param {number} [maxSize]
 * @returns {Promise<ModelRunResult>}
 */
export async function randomModelRun(host, regions, ops, rand, batch = 32, maxSize = 4096) {
  /** @type {ModelRunResult} */
  const result = { reads: 0, writes: 0, mismatches: [], mismatchCount: 0 };
  for (let done = 0; done < ops;) {
    /** @type {Array<Promise<unknown>>} */
    const round = [];
    for (let i = 0; i < batch && done < ops; ++i, ++done) {
      const r = /** @type {ModelRegion} */ (regions[rand.int(regions.length)]);
      const cap = r.model.length;
      const size = 1 + rand.int(Math.min(maxSize, cap));
      const where = rand.int(8);
      const offset = where === 0 ? cap - size : where === 1 ? 0 : rand.int(cap - size + 1);
      if (rand.int(2) === 0) {
        const data = rand.bytes(size);
        data.copy(r.model, offset);
        result.writes++;
        round.push(host.write(r.region, offset, data).then((n) => {
          if (n !== size) throw new Error(`write of ${size} bytes at ${r.region}:${offset} reported ${n}`);
        }));
      } else {
        const expected = Buffer.from(r.model.subarray(offset, offset + size));
        result.reads++;
        round.push(host.read(r.region, offset, size).then((got) => {
          if (got.equals(expected)) return;
          result.mismatchCount++;
          if (result.mismatches.length < 20) result.mismatches.push([r.region, offset, size]);
        }));
      }
    }
    await Promise.all(round);
  }
  return result;
}
