// connection.hpp — one client connection of the memory server: the hello, REQUEST frames executed
// straight from the receive buffer into the send buffer, and back-pressure on slow readers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/log_queue.hpp"
#include "common/net.hpp"
#include "memserver/held_responses.hpp"
#include "memserver/tenant.hpp"
#include "memserver/mem_store.hpp"
#include "common/unique_fd.hpp"

namespace pd3 {

struct TcpServerOptions;
struct TcpServerStats;

// Request frames counted by records per frame: buckets ≤1, ≤2, ≤4, … ≤4096, then more.
inline constexpr size_t kBatchBuckets = 14;
using BatchHistogram = std::array<uint64_t, kBatchBuckets>;
// The bucket of a frame holding `records` records.
size_t batch_bucket(uint32_t records);

// What the connections of one server share. All of it belongs to the server's loop thread.
struct ConnectionContext {
  const TcpServerOptions& options;
  MemStore& store;
  TcpServerStats& stats;
  BatchHistogram& histogram;
  LogQueue& log;
};

// One client, driven by the loop thread through handle() until it is no longer open().
//
// A REQUEST frame is validated whole before any of its records runs. Its records then run in
// order while their worst-case responses (response_space) fit in what is left of max_frame; a
// record that would not fit is answered PD3_E_TOO_BIG without running, so no frame can make the
// server build an unbounded response. The store is synced once per frame before the response is
// queued; if that fails the response is withdrawn and the connection closed, so nothing is
// acknowledged that is not durable.
//
// With the SSD tier, a record whose pages are not in DRAM parks the frame (MemStore::prepare
// started their reads): the connection neither runs nor reads anything more until resume(), called
// by the server after I/O completed, finds the record ready. Other connections are served meanwhile;
// this one's responses stay in order.
//
// A frame whose sync waits for the disk (the tier's group commit) does not stop the connection: its
// response is held, and the frames after it run meanwhile, so their writes join the next batch
// instead of each waiting a batch of its own. By default held responses are sent strictly in order,
// each once its own sync and every earlier one's are done. A client whose hello asked for
// PD3_HELLO_ANY_ORDER matches responses by seq: each held response goes as soon as its own sync is
// done, so a read need not wait behind an unrelated write's fdatasync (a read of what an earlier
// frame wrote waits for that write's batch all the same: MemStore::begin_sync). A failed sync
// closes the connection with every held response unsent.
class Connection {
 public:
  Connection(const ConnectionContext& ctx, uint64_t id, UniqueFd fd, std::string peer, uint64_t hello_deadline_ns);

  // Reacts to the epoll events reported for the socket.
  void handle(uint32_t events);
  // Closes the connection if it is still waiting for its hello at `now_ns` past its deadline.
  void expire_hello(uint64_t now_ns);
  // Closes the socket now, logging conn.close with `reason`; unsent responses are dropped.
  void close(const char* reason);
  // Retries a parked frame and sends the held responses whose syncs are done (the tier's I/O
  // progressed); true if it got further (records ran, which released pins other parked requests may
  // be waiting for, or responses were released).
  bool resume();
  // Waits for the tier: a record's pages, or a held response's sync.
  bool parked() const { return parked_ || !held_.empty(); }

  bool open() const { return phase_ != Phase::kClosed; }
  uint64_t id() const { return id_; }
  int fd() const { return fd_.get(); }
  // The epoll events the connection waits for now.
  uint32_t interest() const;
  // The events currently registered with epoll for it (kept by the server).
  uint32_t registered = 0;

 private:
  // kHello: the first frame must be a HELLO. kServing: REQUEST frames. kDraining: the peer has
  // stopped sending; the responses owed are written, then the connection closes.
  enum class Phase { kHello, kServing, kDraining, kClosed };

  bool reading() const;
  void read_input();
  // Alternates running buffered frames and writing responses until neither can progress.
  void pump();
  // Runs complete buffered frames; true if it stopped because unsent output passed the limit.
  bool execute_buffered();
  bool on_hello(const pd3_frame& hdr, const uint8_t* body);
  bool on_request(const pd3_frame& hdr, const uint8_t* body);
  // Runs the active frame's records from where it stopped; false if it parked or the connection closed.
  bool run_frame();
  // Starts the sync of the frame's writes and queues its response, or holds it while that sync (or
  // an earlier held frame's) waits for the disk; false if the sync failed (connection closed).
  bool finish_frame(FrameBuilder& b, size_t start);
  // Queues the held responses that may leave now (HeldResponses::release); false if a sync failed
  // (connection closed).
  bool release_held();
  // Counts a frame whose response was queued.
  void count_frame(uint32_t records);
  // Response bytes not yet written: queued and held.
  size_t unsent() const { return out_.pending() + held_.bytes(); }
  // Closes the connection for a failed sync: frame `seq` and the others held with it, `unacknowledged`
  // frames in all, are never answered.
  void sync_failed(uint64_t seq, size_t unacknowledged, const char* why);
  bool flush();
  void end_of_input();
  void refuse(const char* reason);
  void protocol_error(const char* reason);

  const ConnectionContext& ctx_;
  const uint64_t id_;
  UniqueFd fd_;
  const std::string peer_;
  const uint64_t hello_deadline_ns_;
  Phase phase_ = Phase::kHello;
  FrameReader in_;
  OutBuffer out_;
  bool peer_done_ = false;  // the peer closed its side (or the socket failed): no more input
  bool paused_ = false;     // unsent responses passed max_output_bytes: no reading until they drain
  uint64_t frames_ = 0;
  // The REQUEST frame being run (its body stays in in_, which is not touched while it is parked).
  struct ActiveFrame {
    pd3_frame hdr{};
    const uint8_t* body = nullptr;
    size_t len = 0;
    size_t pos = 0;                // offset of the next record in body
    uint32_t next = 0;             // index of the next record
    uint64_t budget = 0;           // response bytes left
    std::vector<uint8_t> partial;  // records answered before it parked
    uint32_t answered = 0;         // how many
  };
  ActiveFrame frame_;
  bool parked_ = false;
  HeldResponses held_;  // responses waiting for their frames' syncs
  tier::Pins pins_;  // what the parked record holds in the tier
  Tenant tenant_;  // whom the hello admitted: every request runs for this tenant
};

}  // namespace pd3
