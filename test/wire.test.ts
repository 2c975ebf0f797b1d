// wire.test.ts — the TS view of the C definitions: constants, hash port, control block layout.
import { describe, expect, it } from 'vitest';
import { constants as C, lzKeyHash, Pd3Host } from '../dist/host/index.js';
import { addon } from '../dist/host/native.js';
import { MAX_SERVER_ID, REGION_LOCAL_BITS } from '../dist/common/constants.js';
import { TENANT_NAME_MAX } from '../dist/common/tenant-record.js';
import { uniqueName } from './helpers.js';

describe('wire constants', () => {
  it('exports every status as a distinct negative code, PD3_OK = 0', () => {
    const codes = Object.values(C.status);
    expect(C.status.PD3_OK).toBe(0);
    expect(new Set(codes).size).toBe(codes.length);
    for (const [name, code] of Object.entries(C.status)) if (name !== 'PD3_OK') expect(code).toBeLessThan(0);
  });

  it('has control-block cursors on separate cache lines', () => {
    const lines = ['req_tail', 'req_head', 'resp_tail', 'resp_head', 'lz_tail_seq', 'host_requests', 'agent_batches'] as const;
    const seen = new Set(lines.map((f) => Math.floor(C.control[f] / 64)));
    expect(seen.size).toBe(lines.length);
  });

  it('has 32-bit region ids (server:16 | local:16) in a 16-byte request header', () => {
    expect(C.REGION_SERVER_BITS).toBe(16);
    expect(C.REGION_LOCAL_BITS).toBe(16);
    expect(C.MAX_SERVERS).toBe(65536);
    expect(C.REGION_LOCAL_MAX).toBe(65535);
    // The settings' copy of the largest server id (checked before any addon loads) agrees.
    expect(MAX_SERVER_ID).toBe(C.MAX_SERVERS - 1);
    expect(REGION_LOCAL_BITS).toBe(C.REGION_LOCAL_BITS);
    expect(TENANT_NAME_MAX).toBe(C.TENANT_MAX); // the TS settings check tenant names without the addon
    expect(C.SIZEOF_REQUEST).toBe(16);
    expect([C.REQUEST_OP_ID, C.REQUEST_RESERVED, C.REQUEST_REGION, C.REQUEST_OFFSET, C.REQUEST_SIZE]).toEqual([0, 2, 4, 8, 12]);
    expect([C.SIZEOF_ALLOC_REPLY, C.ALLOC_REPLY_REGION, C.ALLOC_REPLY_CAPACITY]).toEqual([8, 0, 4]);
    expect(C.TRANSPORT_VERSION).toBe(3);
    expect([C.HELLO_FLAGS, C.HELLO_ANY_ORDER]).toEqual([10, 1]);
    expect(C.LAYOUT_VERSION).toBe(6);
    expect([C.SIZEOF_SLOT, C.SLOT_COUNT, C.SLOT_ALIGN, C.RECORD_ALIGN]).toEqual([16, 14, 16, 8]);
    expect([C.SLOT_RECORD, C.SLOT_PAD, C.SLOT_RECORDS, C.SLOT_MAX_RECORDS]).toEqual([1, 2, 3, 65535]);
    // A region id of server 40000 is above 2^31: unsigned shifts take it apart.
    const region = ((40000 << C.REGION_LOCAL_BITS) | 7) >>> 0;
    expect(region).toBeGreaterThan(2 ** 31);
    expect(region >>> C.REGION_LOCAL_BITS).toBe(40000);
    expect(region & C.REGION_LOCAL_MAX).toBe(7);
  });

  it('reads the magic and version the native code wrote', () => {
    const name = uniqueName('magic');
    const host = Pd3Host.create({ name });
    const raw = new addon.HostHandle('attach', name);
    try {
      const view = new DataView(raw.segmentBuffer());
      expect(view.getBigUint64(C.control.magic, true)).toBe(C.SEGMENT_MAGIC);
      expect(view.getUint32(C.control.layout_version, true)).toBe(C.LAYOUT_VERSION);
      expect(view.getUint32(C.control.creator_pid, true)).toBe(process.pid);
    } finally {
      raw.close();
      host.close();
    }
  });
});

describe('Loading Zone key hash: TS port equals pd3_lz_key_hash', () => {
  it('agrees on 20,000 random keys of length 0..300', () => {
    let seed = 12345;
    const rnd = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) & 0xff;
    for (let i = 0; i < 20_000; ++i) {
      const key = new Uint8Array(i % 301);
      for (let j = 0; j < key.length; ++j) key[j] = rnd();
      expect(lzKeyHash(key)).toBe(addon.lzKeyHash(key));
    }
  });

  it('spreads 8-byte counter keys over buckets', () => {
    const buckets = new Uint32Array(1024);
    const key = Buffer.alloc(8);
    for (let i = 0; i < 102_400; ++i) {
      key.writeBigUInt64LE(BigInt(i));
      buckets[lzKeyHash(key) & 1023]! += 1;
    }
    expect(Math.max(...buckets)).toBeLessThan(160); // mean 100
    expect(Math.min(...buckets)).toBeGreaterThan(50);
  });
});
