// load-knee.test.ts — choosing the e2e client load (examples/harness/load-knee.ts) without running
// anything: the grid's order (fewest requests outstanding first, then fewer connections), the knee
// (the first load within the tolerance of the peak, the peak itself at worst), the --load-grid
// syntax and its refusals, and the table marking knee and peak.
import { describe, expect, it } from 'vitest';
import { findKnee, kneeTable, loadGrid, parseLoadGrid, type KneeRow } from '../dist/examples/harness/load-knee.js';

const row = (connections: number, pipeline: number, kops: number): KneeRow =>
  ({ connections, pipeline, outstanding: connections * pipeline, kops, passKops: [kops / 2, kops], p50Us: 100, p99Us: 400, errors: 0 });

describe('loadGrid', () => {
  it('orders by requests outstanding, ties by fewer connections', () => {
    const grid = loadGrid([1, 2, 4], [1, 2, 4]).map((l) => `${l.connections}x${l.pipeline}`);
    expect(grid).toEqual(['1x1', '1x2', '2x1', '1x4', '2x2', '4x1', '2x4', '4x2', '4x4']);
  });
});

describe('findKnee', () => {
  it('takes the first load in grid order within 10% of the peak, not the peak', () => {
    const rows = [row(1, 1, 40), row(1, 2, 80), row(2, 2, 185), row(4, 2, 200), row(4, 4, 195)];
    const { peak, knee, tolerance } = findKnee(rows);
    expect(peak).toBe(rows[3]);
    expect(knee).toBe(rows[2]);  // 185 ≥ 0.9 × 200
    expect(tolerance).toBe(0.1);
  });

  it('is the peak when nothing smaller comes within the tolerance', () => {
    const rows = [row(1, 1, 10), row(1, 2, 50), row(2, 2, 100)];
    expect(findKnee(rows, 0.1).knee).toBe(rows[2]);
    expect(findKnee(rows, 0.5).knee).toBe(rows[1]);  // 50 ≥ 0.5 × 100
  });

  it('refuses no rows and a tolerance outside [0, 1)', () => {
    expect(() => findKnee([])).toThrow(/no rows/);
    expect(() => findKnee([row(1, 1, 1)], 1)).toThrow(/tolerance/);
    expect(() => findKnee([row(1, 1, 1)], -0.1)).toThrow(/tolerance/);
  });
});

describe('parseLoadGrid', () => {
  it('reads CONNECTIONS:PIPELINES, dropping repeats', () => {
    expect(parseLoadGrid('1,2,4,8:1,2,4,8,16,32')).toEqual({ connections: [1, 2, 4, 8], pipelines: [1, 2, 4, 8, 16, 32] });
    expect(parseLoadGrid('4,4:8')).toEqual({ connections: [4], pipelines: [8] });
  });

  it.each([
    ['1,2,4', /CONNECTIONS:PIPELINES/],
    ['1:2:3', /CONNECTIONS:PIPELINES/],
    ['0:8', /connections must be integers in 1\.\.1024, got '0'/],
    ['2000:8', /connections .*got '2000'/],
    ['4:5000', /pipelines must be integers in 1\.\.4096, got '5000'/],
    ['4:x', /pipelines .*got 'x'/],
    ['4,:8', /connections .*got ''/],
    ['1.5:8', /got '1\.5'/],
  ])('refuses %s', (text, why) => {
    expect(() => parseLoadGrid(text)).toThrow(why);
  });
});

describe('kneeTable', () => {
  it('has one row per load with its share of the peak, and marks knee and peak', () => {
    const rows = [row(1, 1, 50), row(2, 2, 95), row(4, 4, 100)];
    const lines = kneeTable(rows, findKnee(rows)).split('\n');
    expect(lines).toHaveLength(2 + rows.length);
    expect(lines[2]).toMatch(/^\| 1 \| 1 \| 1 \| 50\.0 \| 50% \| 25\.0, 50\.0 \|.*\| {2}\|$/);
    expect(lines[3]).toMatch(/^\| 2 \| 2 \| 4 \| 95\.0 \| 95% \|.*knee \(smallest within 10% of the peak\) \|$/);
    expect(lines[4]).toMatch(/^\| 4 \| 4 \| 16 \| 100\.0 \| 100% \|.*\| peak \|$/);
  });
});
