// An agent's view of the pool's membership (common/pool-view.ts), without etcd: what each put, delete
// and re-list after an outage tells the engine, and the changes it reports.
import { describe, expect, it } from 'vitest';
import { MEMBER_RECORD_VERSION, memberIdOfKey, type MemberRecord } from '../dist/common/pool-record.js';
import { PoolView } from '../dist/common/pool-view.js';

function record(serverId: number, port: number): MemberRecord {
  return {
    v: MEMBER_RECORD_VERSION,
    serverId,
    address: `127.0.0.1:${port}`,
    capacityBytes: 1 << 20,
    freeBytes: 1 << 20,
    harvestableBytes: 0,
    startedMs: 1,
    updatedMs: 2,
  };
}

/** A view over members 1 and 2 (ports 7401, 7402) whose engine calls are recorded. */
function twoMembers(): { view: PoolView; calls: string[] } {
  const calls: string[] = [];
  const view = new PoolView([record(1, 7401), record(2, 7402)], {
    setMember: (address, member) => calls.push(`${member ? '+' : '-'}${address}`),
  });
  return { view, calls };
}

describe('PoolView', () => {
  it('ignores refreshes, and tells the engine when a member leaves and comes back', () => {
    const { view, calls } = twoMembers();
    expect(view.put({ ...record(1, 7401), freeBytes: 5 })).toEqual([]);
    expect(view.delete(2)).toEqual([{ kind: 'left', serverId: 2, address: '127.0.0.1:7402' }]);
    expect(view.delete(2)).toEqual([]); // gone already
    expect(view.size).toBe(1);
    expect(view.put(record(2, 7402))).toEqual([{ kind: 'returned', serverId: 2, address: '127.0.0.1:7402' }]);
    expect(calls).toEqual(['-127.0.0.1:7402', '+127.0.0.1:7402']);
    expect(view.size).toBe(2);
  });

  it('tells the engine of a server new to it, and of a member that moved to another address', () => {
    const { view, calls } = twoMembers();
    expect(view.put(record(3, 7403))).toEqual([{ kind: 'joined', serverId: 3, address: '127.0.0.1:7403' }]);
    expect(view.put(record(1, 7411))).toEqual([
      { kind: 'left', serverId: 1, address: '127.0.0.1:7401' },
      { kind: 'joined', serverId: 1, address: '127.0.0.1:7411' },
    ]);
    expect(calls).toEqual(['+127.0.0.1:7403', '-127.0.0.1:7401', '+127.0.0.1:7411']);
  });

  it('keeps an address placeable while another id still names it', () => {
    const { view, calls } = twoMembers();
    // Server 2 restarted on the same port as server 5 before its old record expired.
    view.put(record(5, 7402));
    expect(view.delete(2)).toEqual([{ kind: 'left', serverId: 2, address: '127.0.0.1:7402' }]);
    expect(calls).toEqual(['+127.0.0.1:7402']); // never told to stop placing there
  });

  it('catches up with a list taken after an outage: who left, who came back, who is new', () => {
    const { view, calls } = twoMembers();
    view.delete(1); // left before the outage
    calls.length = 0;
    // During the outage: 2 left, 1 came back, 4 joined.
    const changes = view.reconcile([record(1, 7401), record(4, 7404)]);
    expect(changes).toEqual([
      { kind: 'left', serverId: 2, address: '127.0.0.1:7402' },
      { kind: 'returned', serverId: 1, address: '127.0.0.1:7401' },
      { kind: 'joined', serverId: 4, address: '127.0.0.1:7404' },
    ]);
    expect(calls).toEqual(['-127.0.0.1:7402', '+127.0.0.1:7401', '+127.0.0.1:7404']);
    expect(view.reconcile([record(1, 7401), record(4, 7404)])).toEqual([]); // nothing new
    expect(view.size).toBe(2);
  });

  it('reads the server id of a member key, and nothing else', () => {
    expect(memberIdOfKey('/pd3', '/pd3/members/12')).toBe(12);
    expect(memberIdOfKey('/', '/members/0')).toBe(0);
    for (const key of ['/pd3/members/', '/pd3/members/012', '/pd3/members/1/x', '/pd3/other/1', '/pd3/members/99999999999', '/pd3/members/4294967296']) {
      expect(memberIdOfKey('/pd3', key)).toBeNull();
    }
  });
});
