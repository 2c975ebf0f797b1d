// host_view.hpp — Host View (paper §5.2): the agent's record of which keys the host caches, as
// key hashes sharded by hash across threads. Each shard is a CuckooSet owned by one thread; the
// agent hands it batches through an SPSC queue and gets them back, verdicts filled, through
// another. Nothing is shared between shards. With no shard threads (shards = 0) the one table
// belongs to the submitting thread, which runs each batch as it submits it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "dpu/agent_doorbell.hpp"
#include "dpu/cuckoo_set.hpp"
#include "dpu/spsc_queue.hpp"

namespace pd3 {

// What a batch asks of its shard.
enum class HostViewOp : uint8_t { kLookup, kInsert, kErase };

// One batch for one shard. The submitter owns both arrays until the batch comes back.
// verdicts[i]: lookup 1 = present; insert 1 = added or present, 0 = no room; erase 1 = removed.
struct HostViewBatch {
  HostViewOp op;
  uint32_t n;
  const uint64_t* hashes;
  uint8_t* verdicts;
  uint64_t tag;  // the submitter's, returned unchanged
};

// How a HostView is built.
struct HostViewOptions {
  uint64_t capacity = 0;      // keys in total (each shard gets capacity / shards, rounded up)
  uint32_t shards = 1;        // shard threads; 0: none, the submitter's thread runs every batch
  uint32_t queue_depth = 1024;
  CuckooOptions table;        // per-shard table options (capacity is set from the above)
  AgentDoorbell* completions = nullptr;  // rung after each finished batch (the submitter may sleep on it)
  // How long an idle shard busy-polls its queue before it sleeps on a futex. Spinning saves the
  // wake-up (a few µs) on a core of its own; on a core shared with the submitter it only delays
  // the submitter, which waits for the shard, so the default is not to spin.
  uint32_t idle_spin_us = 0;
};

// Upper bound of HostViewOptions::idle_spin_us (a second).
inline constexpr uint32_t kMaxHostViewSpinUs = 1000000;

// The sharded Host View service. submit/complete are for one agent thread (the prefetcher);
// run() wraps them for callers that want a blocking batch call.
class HostView {
 public:
  // Returns PD3_OK, PD3_E_INVAL or PD3_E_NOMEM; starts one thread per shard (none for shards = 0).
  static int create(const HostViewOptions& options, std::unique_ptr<HostView>* out);
  ~HostView();  // stops and joins the shard threads

  // The shard that owns a key hash (uses the hash's low 32 bits; the tables use the high ones).
  uint32_t shard_of(uint64_t key_hash) const { return uint32_t((uint64_t(uint32_t(key_hash)) * shards_.size()) >> 32); }
  uint32_t shards() const { return uint32_t(shards_.size()); }
  // True when no shard threads run (HostViewOptions::shards = 0): submit() runs the batch itself.
  bool runs_inline() const { return inline_; }

  // Queues a batch whose hashes all belong to `shard`. False if that shard's queue is full.
  bool submit(uint32_t shard, const HostViewBatch& batch);
  // Takes one finished batch of `shard`. False if none is ready.
  bool complete(uint32_t shard, HostViewBatch* batch);
  // The submitter: true if some shard has a finished batch waiting for complete().
  bool has_completions() const;

  // Blocking: routes `n` hashes to their shards in sub-batches, waits, and writes verdicts in input
  // order. For tests, tools and the TS binding; the prefetcher uses submit/complete. Must not be
  // called while batches from submit() are still in flight (it would collect their completions).
  void run(HostViewOp op, const uint64_t* hashes, size_t n, uint8_t* verdicts);

  // Sum over shards (read while no batch is in flight).
  uint64_t size() const;
  uint64_t bytes() const;
  PageKind pages() const;
  SimdPath simd() const;

 private:
  struct Shard;
  explicit HostView(uint32_t shards);

  std::vector<std::unique_ptr<Shard>> shards_;
  bool inline_ = false;
};

}  // namespace pd3
