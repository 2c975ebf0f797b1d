// tcp_reassembly.hpp — per-flow TCP reassembly for the packet mirror (docs/architecture.md §3, §6): turns
// the client→server segments of every connection to the app's port into each connection's byte
// stream, in order, without duplicates and without invented bytes, for the request parsers.
//
// In-order segments are delivered straight from the packet (zero copy); only out-of-order data is
// copied, into a buffer bounded per flow and in total. A hole that cannot be filled (buffer
// overflow, data too far ahead, or no progress for hole_timeout) is skipped: the next bytes are
// delivered with after_gap = true so the parser resyncs. Single-threaded: owned by one thread (the
// mirror's). Design and limits: docs/mirror.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dpu/flow_callbacks.hpp"
#include "dpu/packet_decode.hpp"

namespace pd3 {


// Bounds and timers of flow tracking (shared with MirrorOptions).
struct ReassemblyLimits {
  uint32_t max_flows = 65536;              // flows tracked at once (open or lingering after close)
  uint64_t ooo_flow_bytes = 256u << 10;    // per flow: out-of-order bytes buffered, and how far past
                                           // the next expected byte a segment may end to be buffered
  uint64_t ooo_total_bytes = 64u << 20;    // all flows together
  uint32_t hole_timeout_ms = 200;          // a hole with no progress this long is skipped
  uint32_t idle_timeout_ms = 120000;       // a flow with no segment this long is closed
  uint32_t linger_ms = 2000;               // a closed flow is remembered this long, so late
                                           // retransmits and ACKs do not open a new flow
};

// How a reassembler is built.
struct ReassemblyOptions {
  uint32_t server_ip = 0;    // the app's address, host order; 0 = any address
  uint16_t server_port = 0;  // the app's port (required): segments to it are the client→server side
  ReassemblyLimits limits;
};

// Counters (cumulative unless marked "now").
struct ReassemblyStats {
  uint64_t segments = 0;             // segments handed in
  uint64_t client_segments = 0;      // of those, client→server
  uint64_t client_bytes = 0;         // client→server payload bytes on the wire
  uint64_t server_segments = 0;      // server→client (only a RST is used: it ends the flow)
  uint64_t foreign_segments = 0;     // neither to nor from the app (the mirror's filter keeps them out)
  uint64_t ignored_segments = 0;     // late segments of a closed flow (e.g. the last ACK), or no flow
                                     // yet and nothing that opens one (pure ACK, FIN, RST)
  uint64_t flows_open = 0;           // now
  uint64_t flows_total = 0;          // flows opened
  uint64_t flows_unsynced = 0;       // of those, first seen mid-stream (no SYN)
  uint64_t flows_fin = 0;            // ended by FIN
  uint64_t flows_reset = 0;          // ended by RST
  uint64_t flows_idle = 0;           // ended by idle_timeout
  uint64_t flows_evicted = 0;        // ended because the table was full
  uint64_t flows_replaced = 0;       // ended by a new SYN on the same 4-tuple
  uint64_t duplicate_syns = 0;       // SYNs repeating a known initial sequence number
  uint64_t retransmitted_bytes = 0;  // bytes dropped because they were delivered or buffered already
  uint64_t ooo_segments_buffered = 0;  // out-of-order segments copied into a flow's buffer
  uint64_t ooo_segments_dropped = 0;   // buffered pieces discarded when their flow ended early
  uint64_t ooo_bytes = 0;            // now: bytes buffered out of order
  uint64_t gaps = 0;                 // holes skipped
  uint64_t gap_bytes = 0;            // bytes in those holes (never delivered)
  uint64_t delivered_bytes = 0;      // bytes handed to deliver
  uint64_t deliveries = 0;           // deliver calls
};

// Every ReassemblyStats field, in order (the mirror's counters and any binding are generated from it).
#define PD3_REASSEMBLY_STATS_FIELDS(X)                                                              \
  X(segments) X(client_segments) X(client_bytes) X(server_segments) X(foreign_segments)             \
  X(ignored_segments) X(flows_open) X(flows_total) X(flows_unsynced) X(flows_fin) X(flows_reset)    \
  X(flows_idle) X(flows_evicted) X(flows_replaced) X(duplicate_syns) X(retransmitted_bytes)        \
  X(ooo_segments_buffered) X(ooo_segments_dropped) X(ooo_bytes) X(gaps) X(gap_bytes)               \
  X(delivered_bytes) X(deliveries)

// The flow table and every flow's reassembly state.
class TcpReassembler {
 public:
  // Returns PD3_OK, or PD3_E_INVAL (port 0, a limit of 0, hole_timeout > idle_timeout, no deliver
  // callback, more than 2^24 flows); pd3_last_error says why.
  static int create(const ReassemblyOptions& options, FlowCallbacks callbacks, std::unique_ptr<TcpReassembler>* out);
  ~TcpReassembler();
  TcpReassembler(const TcpReassembler&) = delete;
  TcpReassembler& operator=(const TcpReassembler&) = delete;

  // One decoded segment, seen at `now_ns` (any monotonic clock, never going back). In-order
  // payload is delivered from seg.payload before this returns.
  void on_segment(const TcpSegmentView& seg, uint64_t now_ns);

  // Timers: skips holes older than hole_timeout, closes flows idle for idle_timeout, forgets
  // closed flows after linger. Call every few milliseconds (the mirror does).
  void expire(uint64_t now_ns);

  // Ends every open flow (FlowEnd::kShutdown) and forgets all flows.
  void close_all();

  const ReassemblyStats& stats() const { return stats_; }
  // Flows in the table now (open, and closed ones still lingering).
  uint32_t tracked_flows() const { return live_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Chunk;
  struct Flow;
  // Links of an intrusive doubly linked list over slab indices.
  struct Links {
    uint32_t prev = kNone;
    uint32_t next = kNone;
  };
  // Ends of one such list.
  struct List {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  TcpReassembler(const ReassemblyOptions& options, FlowCallbacks callbacks);

  void client_segment(const FlowKey& key, const TcpSegmentView& seg);
  void server_segment(const FlowKey& key, const TcpSegmentView& seg);
  uint32_t open_flow(const FlowKey& key, bool synced, uint32_t isn, uint32_t first_seq);
  void end_flow(uint32_t idx, FlowEnd why);
  void forget_flow(uint32_t idx);
  void make_room();

  void on_data(Flow& f, uint32_t seq, const uint8_t* p, uint32_t captured, uint32_t wire);
  void take_in_order(Flow& f, int64_t off, const uint8_t* p, uint32_t captured, uint32_t wire);
  void buffer_or_skip(Flow& f, int64_t off, const uint8_t* p, uint32_t captured, uint32_t wire);
  bool fits(const Flow& f, int64_t off, uint32_t len) const;
  void store(Flow& f, int64_t off, const uint8_t* p, uint32_t len);
  void drain(Flow& f);
  void skip_to(Flow& f, int64_t off);
  void flush_holes(Flow& f);
  void update_hole(uint32_t idx, bool progressed);
  void emit(Flow& f, const uint8_t* data, size_t len);
  void discard_buffer(Flow& f);

  uint32_t find(const FlowKey& key) const;
  void index_insert(uint32_t idx);
  void index_erase(uint32_t idx);
  void list_push(List& list, Links Flow::*links, uint32_t idx);
  void list_remove(List& list, Links Flow::*links, uint32_t idx);

  ReassemblyOptions options_;
  FlowCallbacks callbacks_;
  uint64_t hole_timeout_ns_;
  uint64_t idle_timeout_ns_;
  uint64_t linger_ns_;
  uint64_t now_ = 0;
  uint64_t next_flow_id_ = 1;
  uint64_t ooo_charge_ = 0;  // buffered bytes plus per-piece overhead, all flows
  uint32_t live_ = 0;

  std::vector<Flow> flows_;      // slab; indices are stable, grows up to max_flows
  std::vector<uint32_t> free_;   // slab slots to reuse
  std::vector<uint32_t> index_;  // open addressing by FlowKey hash: slab index + 1, 0 = empty
  uint64_t index_mask_ = 0;
  List open_list_;    // open flows, least recently active first
  List closed_list_;  // closed flows lingering, earliest close first
  List hole_list_;    // flows waiting for missing bytes, longest waiting first
  ReassemblyStats stats_;
};

}  // namespace pd3
