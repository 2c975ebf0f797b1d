// request_tap.hpp — the request tap: turns the per-flow client bytes a mirror backend delivers
// (PacketMirror or TeeProxy, flow_callbacks.hpp) into key accesses for the prefetcher's
// AccessQueue, with a parser per flow, resync after gaps and errors, and bounded memory
// (docs/architecture.md §6, §8). Design, sync rules and counters: docs/request-tap.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "dpu/access_queue.hpp"
#include "dpu/flow_callbacks.hpp"
#include "parsers/parser_flow.hpp"
#include "parsers/plugin_loader.hpp"
#include "pd3/parser.h"

namespace pd3 {

// Bounds of a tap.
struct RequestTapOptions {
  uint32_t max_flows = 65536;              // flows with parser state at once (1 .. 2^24); a flow
                                           // opened beyond it is not parsed
  uint64_t max_pending_bytes = 1u << 20;   // per flow: bytes of an unfinished request held until
                                           // the rest arrives (1 B .. 1 GiB); beyond it the flow
                                           // drops them and resyncs
  uint64_t max_pending_total = 256u << 20; // all flows together (≥ max_pending_bytes)
};

// Counters (cumulative unless marked "now"). With every flow closed,
// bytes_delivered == bytes_parsed + bytes_skipped + bytes_refused; while flows are open,
// pending_bytes is the rest.
struct RequestTapStats {
  uint64_t flows_open = 0;         // now: flows with parser state
  uint64_t flows_total = 0;        // flows given parser state
  uint64_t flows_unsynced = 0;     // of those, opened out of sync (synced=false, or first seen
                                   // through a delivery)
  uint64_t flows_refused = 0;      // open attempts refused (max_flows reached, or flow_open
                                   // failed): an open callback, or a delivery to a flow without state
  uint64_t bytes_delivered = 0;    // bytes handed to deliver
  uint64_t bytes_parsed = 0;       // bytes of requests parse_request finished
  uint64_t bytes_skipped = 0;      // bytes never parsed: passed over by resync, dropped after a
                                   // gap, an error or an overflow, or left unfinished at close
  uint64_t bytes_refused = 0;      // bytes delivered to flows without state
  uint64_t pending_bytes = 0;      // now: bytes held for unfinished requests, all flows
  uint64_t parse_calls = 0;        // parse_request calls
  uint64_t request_calls = 0;      // of those, calls that finished at least one request
  uint64_t accesses_read = 0;      // accesses parsed, by op (pushed or not)
  uint64_t accesses_write = 0;
  uint64_t accesses_delete = 0;
  uint64_t parse_errors = 0;       // protocol errors on a flow in sync (a bad client or a parser
                                   // bug; a parser that stops progressing counts here too)
  uint64_t resync_rejects = 0;     // protocol errors at a resync candidate (it was not a request)
  uint64_t resyncs = 0;            // resync found a plausible request start
  uint64_t gaps = 0;               // deliveries with after_gap
  uint64_t desyncs = 0;            // flows that were opened out of sync or lost sync (gap, error,
                                   // overflow): each may hide WRITE/DELETE accesses never parsed
  uint64_t pending_overflows = 0;  // unfinished requests dropped for max_pending_bytes/_total
  uint64_t queue_full = 0;         // accesses the AccessQueue refused (lost)
};

// Every RequestTapStats field, in order (for bindings and metrics).
#define PD3_REQUEST_TAP_STATS_FIELDS(X)                                                             \
  X(flows_open) X(flows_total) X(flows_unsynced) X(flows_refused) X(bytes_delivered) X(bytes_parsed) \
  X(bytes_skipped) X(bytes_refused) X(pending_bytes) X(parse_calls) X(request_calls)                 \
  X(accesses_read) X(accesses_write) X(accesses_delete) X(parse_errors) X(resync_rejects)           \
  X(resyncs) X(gaps) X(desyncs) X(pending_overflows) X(queue_full)

// Parses every flow of one mirror backend. Single-threaded: its callbacks run on the backend's
// thread; only stats() may be called from other threads. Stop the backend before destroying the
// tap (the callbacks point at it).
class RequestTap {
 public:
  // Returns PD3_OK, or PD3_E_INVAL (no parser, no queue, a bound out of range); pd3_last_error
  // says why.
  static int create(const RequestTapOptions& options, ParserHandle parser, AccessQueue* queue,
                    std::unique_ptr<RequestTap>* out);
  ~RequestTap();
  RequestTap(const RequestTap&) = delete;
  RequestTap& operator=(const RequestTap&) = delete;

  // The callbacks to give PacketMirror::start or TeeProxy::start (capture time: when called).
  FlowCallbacks callbacks();
  // The same events from a queue (FlowEventQueue), with the time the backend saw the bytes.
  void open(uint64_t id, bool synced) { on_open(id, synced); }
  void deliver(uint64_t id, const uint8_t* data, size_t len, bool after_gap, uint64_t capture_ns) {
    on_deliver(id, data, len, after_gap, capture_ns);
  }
  void close(uint64_t id) { on_close(id); }

  // A snapshot; each counter is some recent value (they are not read together atomically).
  RequestTapStats stats() const;

 private:
  // Where a flow stands in its byte stream.
  enum class Sync : uint8_t {
    kSynced,     // the next byte starts a request: the flow began with one, or parse_request
                 // accepted a whole request since the last resync
    kCandidate,  // resync found a plausible start; nothing accepted from it yet
    kLost,       // no request boundary known: every byte goes to resync
  };

  // One flow's parser state and the start of its unfinished request.
  struct Flow {
    ParserFlow parser;
    std::vector<uint8_t> pending;  // bytes of the flow's unfinished request, from its first byte
    Sync sync = Sync::kLost;
  };

  // The shared counters: written only by the backend's thread, read by stats().
  struct Counters {
#define PD3_TAP_COUNTER(name) std::atomic<uint64_t> name{0};
    PD3_REQUEST_TAP_STATS_FIELDS(PD3_TAP_COUNTER)
#undef PD3_TAP_COUNTER
  };

  // Accesses one parse_request call may return (≥ PD3_PARSER_MIN_ACCESSES).
  static constexpr uint32_t kMaxAccesses = 256;

  RequestTap(const RequestTapOptions& options, ParserHandle parser, AccessQueue* queue);

  void on_open(uint64_t id, bool synced);
  void on_deliver(uint64_t id, const uint8_t* data, size_t len, bool after_gap, uint64_t capture_ns);
  void on_close(uint64_t id);

  Flow* open_flow(uint64_t id, bool synced);
  void feed(Flow& f, const uint8_t* data, size_t len);
  size_t parse(Flow& f, const uint8_t* buf, size_t len);
  void emit(uint32_t n);
  void keep_tail(Flow& f, const uint8_t* tail, size_t len);
  uint64_t pending_room(const Flow& f) const;
  void drop_pending(Flow& f);
  void lose_sync(Flow& f);

  RequestTapOptions options_;
  ParserHandle parser_;
  AccessQueue* queue_;
  std::unordered_map<uint64_t, Flow> flows_;
  uint64_t pending_total_ = 0;     // bytes in every flow's pending buffer
  uint64_t capture_ns_ = 0;        // when the current delivery arrived
  std::vector<pd3_access> accesses_;  // parse_request's output, reused
  Counters counters_;
};

}  // namespace pd3
