// latency.ts — per-operation latencies of a load run, and their percentiles.

/** Latency samples in microseconds. */
export class LatencySamples {
  private samples = new Float64Array(1024);
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(us: number): void {
    if (this.count === this.samples.length) {
      const grown = new Float64Array(this.samples.length * 2);
      grown.set(this.samples);
      this.samples = grown;
    }
    this.samples[this.count++] = us;
  }

  /** The q-quantile (0..1) by nearest rank; 0 without samples. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const sorted = this.samples.subarray(0, this.count).sort();
    const rank = Math.min(this.count - 1, Math.max(0, Math.ceil(q * this.count) - 1));
    return sorted[rank]!;
  }
}
