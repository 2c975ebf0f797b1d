// engine.hpp — Engine, the implementation behind TransferEngine (transfer_engine.hpp): the Transfer
// Engine's thread takes host requests from the request ring, routes them to memory-server links,
// receives responses into the unified response buffer, keeps Host View and the Loading Zone right
// (Table 2) and publishes responses to the host. Internal to native/dpu: only the files that
// define Engine's parts include it.
//
// One class, its member functions grouped by concept, one file each:
//   transfer_engine.cpp   start, init, launch, stop
//   engine_loop.cpp       the loop: run, service_timers, dispatch, publish, idle_wait, shutdown;
//                         Host View (run_host_view)
//   engine_route.cpp      host requests to server links: take_requests, route, forward (per request)
//   engine_deliver.cpp    server responses to the host: service_sockets, deliver (per request)
//   engine_links.cpp      links and pool membership: apply_members, add_link, fail_link, on_link_up
//   engine_prefetch.cpp   the ports it offers the prefetcher (PrefetchPort) and the hint issuer (HintPort)
//   engine_stats.cpp      stats(), stats_text(), update_gauges
// and pieces with state of their own in classes of their own: EngineCounters (engine_counters.hpp),
// MemberInbox (engine_members.hpp), HintIssuer (hint_issuer.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/placement.hpp"
#include "common/transport_codec.hpp"
#include "common/unique_fd.hpp"
#include "dpu/agent_doorbell.hpp"
#include "dpu/agent_session.hpp"
#include "dpu/engine_counters.hpp"
#include "dpu/engine_members.hpp"
#include "dpu/hint_issuer.hpp"
#include "dpu/host_replies.hpp"
#include "dpu/link_table.hpp"
#include "dpu/response_buffer.hpp"
#include "dpu/server_link.hpp"
#include "dpu/transfer_engine.hpp"
#include "pd3/record.h"
#include "pd3/status.h"

namespace pd3 {

// The engine's times are nanoseconds (now_ns()).
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000000;
constexpr uint64_t kGaugesEveryNs = 1 * kMs;  // gauges of an idle engine are refreshed this often

// The implementation behind TransferEngine: the engine thread's state and the steps of its loop.
class Engine final : public TransferEngine, private PrefetchPort, private HintPort {
 public:
  explicit Engine(const EngineOptions& options);
  ~Engine() override { stop(); }

  [[nodiscard]] int init();
  void launch();

  void stop() override;
  EngineStats stats() const override;
  std::vector<ServerState> servers() const override { return links_.snapshot(); }
  [[nodiscard]] int set_member(const Endpoint& endpoint, bool member) override { return members_.post(endpoint, member); }
  LogQueue& log() override { return log_; }
  uint16_t tee_port() const override { return prefetch_ ? prefetch_->tee_port() : 0; }
  PrefetchPath* prefetch_path() override { return prefetch_.get(); }

 private:
  // Calls fn(key, key_len) for each key of a data record (pd3/record.h, the built-in format).
  template <class Fn>
  static void for_each_key(const uint8_t* data, uint64_t len, Fn&& fn) {
    uint64_t at = 0;
    pd3_kv_entry e;
    while (pd3_kv_next(data, len, &at, &e)) fn(data + e.key_off, e.key_len);
  }

  // The loop (engine_loop.cpp; its per-request steps service_sockets in engine_deliver.cpp and
  // take_requests in engine_route.cpp).
  void run();
  bool service_sockets(uint64_t now);
  bool service_timers(uint64_t now);
  bool take_requests(uint64_t now);
  bool dispatch(uint64_t now);
  bool publish();
  void idle_wait(uint64_t now, uint64_t last_beat);
  bool work_waiting() const;  // a request or a prefetch-path item waits (checked after arming)
  uint32_t idle_rounds_ = 0;  // sleeps since the last work: each doubles the next (to the max)
  void shutdown();

  // Routing (paper §6.1: requests to the server named by their region's top bits; engine_route.cpp).
  void route(const RequestView& v, uint64_t now);
  [[nodiscard]] int link_for_region(uint32_t region, int* status) const;
  int pick_allocate_link(uint32_t size, uint64_t tried, bool retry);
  void send_allocate(int link, const LinkRecord& meta, uint64_t now);
  void forward(int link, const uint8_t* record, uint32_t record_len, LinkRecord meta, uint64_t now);

  // Responses (engine_deliver.cpp; reply and fail_request here: both halves answer per request).
  [[nodiscard]] int check_frame(const ServerLink& link, const ReceivedFrame& f) const;
  void deliver(int link, ReceivedFrame& f, uint64_t now);
  bool after_allocate(int link, const LinkRecord& req, int status, const TransportResponse& r, uint64_t now);
  void reply(uint64_t pos, uint16_t op_id, int status, uint32_t size = 0, const uint8_t* data = nullptr) {
    HostReply r;
    r.pos = pos;
    r.op_id = op_id;
    r.status = status;
    r.size = size;
    r.data = data;
    replies_.push(std::move(r));
  }
  void fail_request(uint64_t pos, uint16_t op_id, int status) {
    if (status == PD3_E_UNAVAILABLE || status == PD3_E_TIMEOUT) bump(counters_.unavailable);
    reply(pos, op_id, status);
  }
  // Answers each host request of `records` with `status`; returns how many (prefetches are skipped).
  size_t fail_records(const std::vector<LinkRecord>& records, int status);
  std::string stats_text() const;  // engine_stats.cpp

  // Links (engine_links.cpp).
  void apply_members();  // the membership changes set_member queued
  void add_link(const Endpoint& endpoint);
  void fail_link(int link, int status, const std::string& why, uint64_t now);
  void on_link_up(int link);
  void refresh_server(int link) { links_.refresh(link, placement_.live(size_t(link))); }

  // Host View (Table 2; engine_loop.cpp).
  void run_host_view(HostViewOp op, std::vector<uint64_t>* hashes);

  // PrefetchPort: the prefetcher's records ride in the same frames as the host's (engine_prefetch.cpp).
  // `server` / `li`: the link index (the prefetcher's name for a server; see servers_up()).
  [[nodiscard]] int send_prefetch(int server, uint16_t op_id, const uint8_t* key, uint16_t key_len,
                                  uint32_t max_size, uint64_t now) override;
  uint32_t servers_up() const override;
  [[nodiscard]] int queue_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                                   bool may_defer, uint64_t now);
  // HintPort: what the issuer "host" path (hints_) asks of the engine (engine_prefetch.cpp).
  int up_server_id(int li) const override;
  int link_of_server(uint32_t server_id) const override { return links_.of_server(server_id); }
  [[nodiscard]] int queue_returned_prefetch(int li, uint16_t op_id, const uint8_t* key, uint16_t key_len,
                                            uint32_t max_size, uint64_t now) override;
  void end_prefetch(uint16_t op_id, int li, int status, uint64_t now) override;
  void update_gauges(uint64_t now);  // engine_stats.cpp

  EngineOptions options_;
  std::unique_ptr<AgentSession> session_;
  uint64_t fence_ = 0;  // the host's fence, read at the start of this pass of the loop
  uint64_t ring_gauge_ns_ = 0;  // when request_ring_bytes was last read
  AgentDoorbell doorbell_;  // rung when accesses or Host View verdicts wait; declared first: outlives both
  std::unique_ptr<HostView> host_view_;
  std::unique_ptr<PrefetchPath> prefetch_;  // declared after host_view_ and doorbell_: destroyed before them
  std::vector<uint8_t> prefetch_record_;     // scratch for one PREFETCH record
  std::unique_ptr<ResponseBuffer> buffer_;
  UniqueFd epoll_;
  LinkOptions link_options_;  // what every link is built with, those added at run time too
  LinkTable links_;  // the memory-server links, and what servers() reports of them
  HostReplies replies_;
  std::map<uint32_t, uint32_t> region_bytes_;  // region → capacity, for free-byte estimates
  Placement placement_;                  // where ALLOCATE goes
  std::vector<PlacementCandidate> candidates_;  // scratch for placement_.pick
  std::vector<uint64_t> erase_hashes_;   // this pass's written keys (Table 2: Del after ①)
  std::vector<uint64_t> insert_hashes_;  // this pass's read keys (Table 2: Add before ④)
  std::vector<uint8_t> verdicts_;
  std::vector<ReceivedFrame> received_;
  std::vector<LinkRecord> orphans_;
  bool ring_broken_logged_ = false;

  LogQueue log_;
  EngineCounters counters_;
  HintIssuer hints_;     // issuer "host": the hints out; holds replies_ and counters_, so declared after them
  MemberInbox members_;  // set_member's changes, for apply_members

  std::thread thread_;
  std::mutex stop_mu_;  // serialises stop()
  std::atomic<bool> stop_{false};
  std::atomic<bool> first_round_done_{false};
};

}  // namespace pd3
