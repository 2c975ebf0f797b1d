// tcp_reassembly.cpp — flow table (open addressing + LRU lists) and per-flow reassembly.
//
// Positions inside a flow are 64-bit stream offsets (0 = the first data byte), converted from
// 32-bit sequence numbers by their signed distance to the next expected one: sequence wraparound
// at 2^32 then needs no special case, as long as a segment lies within 2^31 bytes of that point
// (TCP windows are at most 2^30).
#include "dpu/tcp_reassembly.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "common/error.hpp"
#include "common/mix64.hpp"
#include "pd3/status.h"

namespace pd3 {
namespace {

constexpr uint64_t kNsPerMs = 1000000;
constexpr uint32_t kMaxFlows = 1u << 24;
// Charged per buffered piece on top of its bytes, so that many tiny out-of-order segments cannot
// hold much more memory than the caps say (map node, allocation header).
constexpr uint64_t kPieceOverhead = 64;

uint64_t hash_key(const FlowKey& k) {
  const uint64_t ips = uint64_t(k.client_ip) << 32 | k.server_ip;
  const uint64_t ports = uint64_t(k.client_port) << 16 | k.server_port;
  return mix64(ips ^ mix64(ports + 0x9E3779B97F4A7C15ull));
}

}  // namespace

// Out-of-order bytes of one flow, copied out of their packet.
struct TcpReassembler::Chunk {
  std::unique_ptr<uint8_t[]> bytes;
  uint32_t len = 0;
};

// One tracked connection: where its stream stands, what is buffered, and its list links.
struct TcpReassembler::Flow {
  FlowKey key;
  uint64_t hash = 0;
  uint64_t id = 0;
  uint32_t isn = 0;          // the SYN's sequence number, when has_isn
  uint32_t next_seq = 0;     // sequence number of the next byte to deliver...
  int64_t next_off = 0;      // ...and its stream offset
  int64_t fin_off = 0;       // stream offset of the FIN, when fin_seen
  uint64_t last_seen = 0;    // ns: last segment (open) or the close (closed)
  uint64_t hole_since = 0;   // ns: since when the flow waits for missing bytes (in hole_list_)
  uint64_t ooo_charge = 0;   // buffered bytes plus per-piece overhead
  std::map<int64_t, Chunk> ooo;  // out-of-order bytes by stream offset; pieces never overlap
  Links age;                 // in open_list_ or closed_list_
  Links hole;                // in hole_list_
  bool used = false;
  bool open = false;
  bool has_isn = false;
  bool fin_seen = false;
  bool gap_pending = false;  // the next delivery carries after_gap
  bool waiting = false;      // in hole_list_

  int64_t offset_of(uint32_t seq) const { return next_off + int64_t(int32_t(seq - next_seq)); }
  void advance(uint64_t n) {
    next_seq += uint32_t(n);
    next_off += int64_t(n);
  }
  // Missing bytes it waits for: something buffered past a hole, or a FIN not reached yet.
  bool has_hole() const { return !ooo.empty() || (fin_seen && next_off < fin_off); }
  bool fin_reached() const { return fin_seen && next_off >= fin_off; }
};

const char* flow_end_name(FlowEnd why) {
  switch (why) {
    case FlowEnd::kFin: return "fin";
    case FlowEnd::kReset: return "reset";
    case FlowEnd::kIdle: return "idle";
    case FlowEnd::kEvicted: return "evicted";
    case FlowEnd::kReplaced: return "replaced";
    case FlowEnd::kShutdown: return "shutdown";
  }
  return "unknown";
}

int TcpReassembler::create(const ReassemblyOptions& options, FlowCallbacks callbacks,
                           std::unique_ptr<TcpReassembler>* out) {
  const ReassemblyLimits& l = options.limits;
  if (options.server_port == 0) return fail(PD3_E_INVAL, "reassembly: server port 0");
  if (!callbacks.deliver) return fail(PD3_E_INVAL, "reassembly: no deliver callback");
  if (l.max_flows == 0 || l.max_flows > kMaxFlows)
    return fail(PD3_E_INVAL, "reassembly: max_flows %u outside 1..%u", l.max_flows, kMaxFlows);
  if (l.ooo_flow_bytes == 0 || l.ooo_total_bytes == 0)
    return fail(PD3_E_INVAL, "reassembly: out-of-order caps must be > 0");
  if (l.ooo_flow_bytes > (1u << 30))
    return fail(PD3_E_INVAL, "reassembly: ooo_flow_bytes %llu over 1 GiB (the largest TCP window)",
                (unsigned long long)l.ooo_flow_bytes);
  if (l.hole_timeout_ms == 0 || l.idle_timeout_ms == 0 || l.linger_ms == 0)
    return fail(PD3_E_INVAL, "reassembly: timeouts must be > 0 ms");
  if (l.hole_timeout_ms > l.idle_timeout_ms)
    return fail(PD3_E_INVAL, "reassembly: hole_timeout %u ms > idle_timeout %u ms", l.hole_timeout_ms,
                l.idle_timeout_ms);
  out->reset(new TcpReassembler(options, std::move(callbacks)));
  return PD3_OK;
}

TcpReassembler::TcpReassembler(const ReassemblyOptions& options, FlowCallbacks callbacks)
    : options_(options),
      callbacks_(std::move(callbacks)),
      hole_timeout_ns_(options.limits.hole_timeout_ms * kNsPerMs),
      idle_timeout_ns_(options.limits.idle_timeout_ms * kNsPerMs),
      linger_ns_(options.limits.linger_ms * kNsPerMs) {
  uint64_t slots = 16;
  while (slots < 2ull * options.limits.max_flows) slots <<= 1;  // load ≤ 1/2: short probes
  index_.assign(slots, 0);
  index_mask_ = slots - 1;
}

TcpReassembler::~TcpReassembler() = default;

// ---- segments ----

void TcpReassembler::on_segment(const TcpSegmentView& seg, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  ++stats_.segments;
  const bool any_ip = options_.server_ip == 0;
  if (seg.dst_port == options_.server_port && (any_ip || seg.dst_ip == options_.server_ip)) {
    client_segment(FlowKey{seg.src_ip, seg.dst_ip, seg.src_port, seg.dst_port}, seg);
  } else if (seg.src_port == options_.server_port && (any_ip || seg.src_ip == options_.server_ip)) {
    server_segment(FlowKey{seg.dst_ip, seg.src_ip, seg.dst_port, seg.src_port}, seg);
  } else {
    ++stats_.foreign_segments;
  }
}

void TcpReassembler::server_segment(const FlowKey& key, const TcpSegmentView& seg) {
  ++stats_.server_segments;
  if (!(seg.flags & kTcpRst)) return;
  const uint32_t idx = find(key);
  if (idx != kNone && flows_[idx].open) end_flow(idx, FlowEnd::kReset);
}

void TcpReassembler::client_segment(const FlowKey& key, const TcpSegmentView& seg) {
  ++stats_.client_segments;
  stats_.client_bytes += seg.wire_len;
  uint32_t idx = find(key);
  uint32_t data_seq = seg.seq;
  if (seg.flags & kTcpSyn) {
    data_seq = seg.seq + 1;  // the SYN takes one sequence number; data (TCP Fast Open) follows it
    if (idx != kNone) {
      const Flow& f = flows_[idx];
      if (f.has_isn && f.isn == seg.seq) {
        ++stats_.duplicate_syns;  // a retransmitted SYN: any data in it is handled as a retransmit
      } else {
        if (f.open) end_flow(idx, FlowEnd::kReplaced);  // the 4-tuple starts a new connection
        forget_flow(idx);
        idx = kNone;
      }
    }
    if (idx == kNone) idx = open_flow(key, true, seg.seq, data_seq);
  } else if (idx == kNone) {
    // Mid-stream: only data opens a flow (a pure ACK or FIN after a close must not).
    if (seg.wire_len == 0 || (seg.flags & kTcpRst)) {
      ++stats_.ignored_segments;
      return;
    }
    idx = open_flow(key, false, 0, seg.seq);
  }

  Flow& f = flows_[idx];
  if (!f.open) {
    ++stats_.ignored_segments;  // a late retransmit or ACK of a flow that ended
    // A flow that ended at its FIN delivered every byte before it: data arriving now is a copy
    // (TCP resent it before the ACK reached the sender), so it counts as retransmitted.
    if (f.fin_reached()) stats_.retransmitted_bytes += seg.wire_len;
    return;
  }
  f.last_seen = now_;
  list_remove(open_list_, &Flow::age, idx);
  list_push(open_list_, &Flow::age, idx);
  if (seg.flags & kTcpRst) {
    end_flow(idx, FlowEnd::kReset);
    return;
  }
  const int64_t before = f.next_off;
  if (seg.wire_len > 0) on_data(f, data_seq, seg.payload, seg.payload_len, seg.wire_len);
  if ((seg.flags & kTcpFin) && !f.fin_seen) {
    f.fin_seen = true;
    f.fin_off = f.offset_of(data_seq) + seg.wire_len;
  }
  if (f.fin_reached()) {
    end_flow(idx, FlowEnd::kFin);
  } else {
    update_hole(idx, f.next_off != before);
  }
}

void TcpReassembler::on_data(Flow& f, uint32_t seq, const uint8_t* p, uint32_t captured, uint32_t wire) {
  captured = std::min(captured, wire);
  const int64_t off = f.offset_of(seq);
  if (off + int64_t(wire) <= f.next_off) {
    stats_.retransmitted_bytes += wire;
  } else if (off <= f.next_off) {
    take_in_order(f, off, p, captured, wire);
  } else {
    buffer_or_skip(f, off, p, captured, wire);
  }
}

// Bytes [off, off + wire) with off ≤ next_off < off + wire: the new part goes straight from the
// packet to the parser.
void TcpReassembler::take_in_order(Flow& f, int64_t off, const uint8_t* p, uint32_t captured, uint32_t wire) {
  const uint64_t have = uint64_t(f.next_off - off);
  stats_.retransmitted_bytes += std::min<uint64_t>(have, wire);
  if (have < captured) {
    emit(f, p + have, captured - have);
    f.advance(captured - have);
  }
  drain(f);
  // The capture cut the segment: its uncaptured tail is lost unless the buffer holds it.
  const int64_t end = off + int64_t(wire);
  while (f.next_off < end) {
    const int64_t buffered = f.ooo.empty() ? end : f.ooo.begin()->first;
    skip_to(f, std::min(buffered, end));
    drain(f);
  }
}

// Bytes that start past next_off: buffered if they fit; otherwise the hole before them cannot be
// waited for, so the flow skips to the earliest bytes it has and tries again.
void TcpReassembler::buffer_or_skip(Flow& f, int64_t off, const uint8_t* p, uint32_t captured, uint32_t wire) {
  for (;;) {
    if (fits(f, off, captured)) {
      store(f, off, p, captured);
      return;
    }
    if (f.ooo.empty() || f.ooo.begin()->first >= off) {
      skip_to(f, off);
      take_in_order(f, off, p, captured, wire);
      return;
    }
    skip_to(f, f.ooo.begin()->first);
    drain(f);
    if (off + int64_t(wire) <= f.next_off) {
      stats_.retransmitted_bytes += wire;
      return;
    }
    if (off <= f.next_off) {
      take_in_order(f, off, p, captured, wire);
      return;
    }
  }
}

bool TcpReassembler::fits(const Flow& f, int64_t off, uint32_t len) const {
  const uint64_t cap = options_.limits.ooo_flow_bytes;
  const uint64_t charge = len + kPieceOverhead;
  return uint64_t(off - f.next_off) + len <= cap && f.ooo_charge + charge <= cap &&
         ooo_charge_ + charge <= options_.limits.ooo_total_bytes;
}

// Copies the parts of [off, off + len) no buffered piece holds yet.
void TcpReassembler::store(Flow& f, int64_t off, const uint8_t* p, uint32_t len) {
  int64_t at = off;
  const int64_t end = off + int64_t(len);
  uint64_t stored = 0;
  auto it = f.ooo.upper_bound(at);
  if (it != f.ooo.begin()) {
    const auto prev = std::prev(it);
    at = std::max(at, prev->first + int64_t(prev->second.len));
  }
  while (at < end) {
    const int64_t stop = it == f.ooo.end() ? end : std::min(end, it->first);
    if (stop > at) {
      const uint32_t n = uint32_t(stop - at);
      Chunk c;
      c.bytes.reset(new uint8_t[n]);
      c.len = n;
      std::copy(p + (at - off), p + (stop - off), c.bytes.get());
      f.ooo.emplace_hint(it, at, std::move(c));
      f.ooo_charge += n + kPieceOverhead;
      ooo_charge_ += n + kPieceOverhead;
      stats_.ooo_bytes += n;
      stored += n;
    }
    if (it == f.ooo.end() || it->first >= end) break;
    at = std::max(at, it->first + int64_t(it->second.len));
    ++it;
  }
  stats_.retransmitted_bytes += len - stored;
  if (stored) ++stats_.ooo_segments_buffered;
}

// Delivers buffered pieces that have become contiguous with next_off.
void TcpReassembler::drain(Flow& f) {
  while (!f.ooo.empty()) {
    auto it = f.ooo.begin();
    if (it->first > f.next_off) break;
    const Chunk& c = it->second;
    const uint64_t have = uint64_t(f.next_off - it->first);
    if (have < c.len) {
      stats_.retransmitted_bytes += have;
      emit(f, c.bytes.get() + have, c.len - have);
      f.advance(c.len - have);
    } else {
      stats_.retransmitted_bytes += c.len;
    }
    f.ooo_charge -= c.len + kPieceOverhead;
    ooo_charge_ -= c.len + kPieceOverhead;
    stats_.ooo_bytes -= c.len;
    f.ooo.erase(it);
  }
}

// Gives up on the bytes before `off`: the next delivery says so.
void TcpReassembler::skip_to(Flow& f, int64_t off) {
  if (off <= f.next_off) return;
  ++stats_.gaps;
  stats_.gap_bytes += uint64_t(off - f.next_off);
  f.advance(uint64_t(off - f.next_off));
  f.gap_pending = true;
}

// Skips every hole: delivers all buffered bytes and moves up to the FIN if one was seen.
void TcpReassembler::flush_holes(Flow& f) {
  while (!f.ooo.empty()) {
    skip_to(f, f.ooo.begin()->first);
    drain(f);
  }
  if (f.fin_seen) skip_to(f, f.fin_off);
}

void TcpReassembler::emit(Flow& f, const uint8_t* data, size_t len) {
  const bool after_gap = f.gap_pending;
  f.gap_pending = false;
  stats_.delivered_bytes += len;
  ++stats_.deliveries;
  callbacks_.deliver(f.id, data, len, after_gap);
}

// Keeps hole_list_ in step with the flow: in it (timer running) while bytes are missing; the
// timer restarts whenever the stream moves forward.
void TcpReassembler::update_hole(uint32_t idx, bool progressed) {
  Flow& f = flows_[idx];
  const bool hole = f.has_hole();
  if (f.waiting && (!hole || progressed)) {
    list_remove(hole_list_, &Flow::hole, idx);
    f.waiting = false;
  }
  if (hole && !f.waiting) {
    f.hole_since = now_;
    list_push(hole_list_, &Flow::hole, idx);
    f.waiting = true;
  }
}

void TcpReassembler::discard_buffer(Flow& f) {
  stats_.ooo_segments_dropped += f.ooo.size();
  for (const auto& [off, c] : f.ooo) stats_.ooo_bytes -= c.len;
  ooo_charge_ -= f.ooo_charge;
  f.ooo_charge = 0;
  f.ooo.clear();
}

// ---- flow lifetime ----

uint32_t TcpReassembler::open_flow(const FlowKey& key, bool synced, uint32_t isn, uint32_t first_seq) {
  if (live_ >= options_.limits.max_flows) make_room();
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    idx = uint32_t(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[idx];
  f = Flow{};
  f.key = key;
  f.hash = hash_key(key);
  f.id = next_flow_id_++;
  f.used = true;
  f.open = true;
  f.has_isn = synced;
  f.isn = isn;
  f.next_seq = first_seq;
  f.gap_pending = !synced;  // mid-stream: the first byte is probably not a request boundary
  f.last_seen = now_;
  index_insert(idx);
  list_push(open_list_, &Flow::age, idx);
  ++live_;
  ++stats_.flows_open;
  ++stats_.flows_total;
  if (!synced) ++stats_.flows_unsynced;
  if (callbacks_.open) callbacks_.open(f.id, key, synced);
  return idx;
}

// Ends an open flow: its buffered bytes are dropped (callers flush first when they should be
// delivered) and it lingers on the closed list.
void TcpReassembler::end_flow(uint32_t idx, FlowEnd why) {
  Flow& f = flows_[idx];
  discard_buffer(f);
  if (f.waiting) {
    list_remove(hole_list_, &Flow::hole, idx);
    f.waiting = false;
  }
  list_remove(open_list_, &Flow::age, idx);
  f.open = false;
  f.last_seen = now_;
  list_push(closed_list_, &Flow::age, idx);
  --stats_.flows_open;
  switch (why) {
    case FlowEnd::kFin: ++stats_.flows_fin; break;
    case FlowEnd::kReset: ++stats_.flows_reset; break;
    case FlowEnd::kIdle: ++stats_.flows_idle; break;
    case FlowEnd::kEvicted: ++stats_.flows_evicted; break;
    case FlowEnd::kReplaced: ++stats_.flows_replaced; break;
    case FlowEnd::kShutdown: break;
  }
  if (callbacks_.close) callbacks_.close(f.id, why);
}

// Removes a closed flow from the table.
void TcpReassembler::forget_flow(uint32_t idx) {
  Flow& f = flows_[idx];
  list_remove(closed_list_, &Flow::age, idx);
  index_erase(idx);
  f.used = false;
  free_.push_back(idx);
  --live_;
}

// The table is full: forget the oldest closed flow, or else evict the least recently active one.
void TcpReassembler::make_room() {
  if (closed_list_.head != kNone) {
    forget_flow(closed_list_.head);
    return;
  }
  const uint32_t victim = open_list_.head;
  end_flow(victim, FlowEnd::kEvicted);
  forget_flow(victim);
}

void TcpReassembler::expire(uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  while (hole_list_.head != kNone && flows_[hole_list_.head].hole_since + hole_timeout_ns_ <= now_) {
    const uint32_t idx = hole_list_.head;
    Flow& f = flows_[idx];
    flush_holes(f);
    if (f.fin_reached()) {
      end_flow(idx, FlowEnd::kFin);
    } else {
      update_hole(idx, true);
    }
  }
  while (open_list_.head != kNone && flows_[open_list_.head].last_seen + idle_timeout_ns_ <= now_) {
    const uint32_t idx = open_list_.head;
    Flow& f = flows_[idx];
    flush_holes(f);
    end_flow(idx, f.fin_reached() ? FlowEnd::kFin : FlowEnd::kIdle);
  }
  while (closed_list_.head != kNone && flows_[closed_list_.head].last_seen + linger_ns_ <= now_) {
    forget_flow(closed_list_.head);
  }
}

void TcpReassembler::close_all() {
  while (open_list_.head != kNone) end_flow(open_list_.head, FlowEnd::kShutdown);
  while (closed_list_.head != kNone) forget_flow(closed_list_.head);
}

// ---- flow index ----

uint32_t TcpReassembler::find(const FlowKey& key) const {
  for (uint64_t i = hash_key(key) & index_mask_;; i = (i + 1) & index_mask_) {
    const uint32_t slot = index_[i];
    if (slot == 0) return kNone;
    if (flows_[slot - 1].key == key) return slot - 1;
  }
}

void TcpReassembler::index_insert(uint32_t idx) {
  uint64_t i = flows_[idx].hash & index_mask_;
  while (index_[i] != 0) i = (i + 1) & index_mask_;
  index_[i] = idx + 1;
}

// Linear-probing delete with backward shift: later entries of the probe run move up so lookups
// never stop early at the freed slot (no tombstones).
void TcpReassembler::index_erase(uint32_t idx) {
  uint64_t hole = flows_[idx].hash & index_mask_;
  while (index_[hole] != idx + 1) hole = (hole + 1) & index_mask_;
  for (uint64_t j = (hole + 1) & index_mask_; index_[j] != 0; j = (j + 1) & index_mask_) {
    const uint64_t home = flows_[index_[j] - 1].hash & index_mask_;
    // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = 0;
}

void TcpReassembler::list_push(List& list, Links Flow::*links, uint32_t idx) {
  Links& l = flows_[idx].*links;
  l.prev = list.tail;
  l.next = kNone;
  if (list.tail != kNone) {
    (flows_[list.tail].*links).next = idx;
  } else {
    list.head = idx;
  }
  list.tail = idx;
}

void TcpReassembler::list_remove(List& list, Links Flow::*links, uint32_t idx) {
  Links& l = flows_[idx].*links;
  if (l.prev != kNone) {
    (flows_[l.prev].*links).next = l.next;
  } else {
    list.head = l.next;
  }
  if (l.next != kNone) {
    (flows_[l.next].*links).prev = l.prev;
  } else {
    list.tail = l.prev;
  }
  l.prev = l.next = kNone;
}

}  // namespace pd3
