// lz_producer.hpp — the agent's side of the Loading Zone over HostDma: produce items, clean Head,
// reclaim, invalidate (the design: common/lz_view.hpp and docs/loading-zone.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpu/host_layout.hpp"

namespace pd3 {

// Producer of one segment's Loading Zone. Single-threaded by contract: every method must be called
// from the same thread (the Transfer Engine's, docs/architecture.md §8), which is what orders Host
// View and zone changes. The zone's cursors, bucket heads and descriptor fields are written by the
// agent only, so it keeps them in agent memory (read once at construction, so a restarted agent
// resumes) and only writes them to the host; the descriptors' state words, which consumers CAS, are
// read and changed with DMA atomics.
class LzProducer {
 public:
  // Reads the cursors, bucket heads and descriptors (three reads).
  LzProducer(HostDma& dma, const HostLayout& layout, AgentCounters& counters);

  // Puts an item into the zone (paper §6.2 prefetch response → §7.2 zone item): published at once,
  // or inside a batch (begin_batch) at end_batch. If the zone lacks room, the oldest items are
  // reclaimed whatever their state. Returns the item's seq (> 0), or PD3_E_INVAL (empty key, key >
  // 65535 bytes, or size 0: an empty item could not be told from a miss) or PD3_E_TOO_BIG (the
  // record could never fit the data ring).
  // DMA: a write of the record and a write of the descriptor's fields; then, when published, a
  // fence, the state word, a fence, the bucket head, the cursors and the counters' line (a batch
  // pays the fences, cursors and counters once for all its items). Per item reclaimed, an atomic
  // swap and a fence.
  int64_t produce(uint16_t op_id, const void* key, uint32_t key_len, const void* data, uint32_t size);

  // Opens a batch: the items produce() puts in until end_batch() are published together (§7:
  // the responses of one pass over the memory servers' sockets). Consumers see none of them
  // before end_batch(). Every other method publishes the batch's items first, and so does
  // produce() when making room would reclaim one of them, so a batch never changes what the
  // zone's other operations see. Batches do not nest.
  void begin_batch();
  // Publishes the batch's items (none: no DMA) and closes it.
  void end_batch();

  // Advances Head past items that are no longer PRODUCED (consumed or invalidated), freeing their
  // space. Stops at the first PRODUCED item. Returns the number of items freed.
  // DMA: one read of up to kStateBatch state words, a write per item freed, one fence.
  uint32_t clean();

  // Withdraws every PRODUCED item of `key` (a newer write or delete of the key was seen), so no
  // consumer can take it afterwards. Returns the number withdrawn. DMA: an atomic CAS per item of
  // the key's bucket whose 32-bit hash and 64-bit fingerprint match and that no earlier CAS of
  // this agent settled, won or lost (a state that left PRODUCED never returns to it for that seq); the
  // fingerprints are kept in agent memory, so nothing is read back. Two keys with the same hash and
  // fingerprint (odds about 2^-64 per pair) withdraw each other's items: a lost hit, never a stale
  // value. Items produced before a restart have no fingerprint here: their keys are read from the
  // host and compared.
  uint32_t invalidate(const void* key, uint32_t key_len);

  // Withdraws every PRODUCED item, whatever its key (an invalidation of some unknown key may have
  // been missed: docs/prefetcher.md). Returns the number withdrawn. DMA: state words read in
  // batches, an atomic CAS per PRODUCED item.
  uint32_t invalidate_all();

  // Items published and not yet freed (any state).
  uint64_t pending() const { return cur_.tail_seq - cur_.head_seq; }

  // State words read per DMA at most by clean() and invalidate_all().
  static constexpr uint32_t kStateBatch = 64;

 private:
  // The Loading Zone cursors, pd3_control line 7 (this order).
  struct Cursors {
    uint64_t tail_seq, head_seq, data_tail, data_head;
  };
  // A descriptor as the agent keeps it: the fields it writes to the host (the first
  // kHostFieldBytes, pd3_lz_desc after the state word), then what only the agent needs.
  struct Desc {
    uint64_t next_seq, data_pos;
    uint32_t key_hash, record_len;
    // The key's fingerprint (fingerprint()), or kUnknownFingerprint (produced before a restart:
    // compare the key in the record), or kSettled (a CAS of ours withdrew the item or found it
    // taken: it is PRODUCED no more, and invalidate() skips it).
    uint64_t key_fp;
  };
  static constexpr size_t kHostFieldBytes = 24;
  static_assert(offsetof(Desc, key_fp) == kHostFieldBytes, "the host's fields first, as pd3_lz_desc has them");
  static constexpr uint64_t kUnknownFingerprint = 0;
  static constexpr uint64_t kSettled = 1;

  // A key's fingerprint as Desc keeps it (host_view_key_hash, never one of the two markers).
  static uint64_t fingerprint(const void* key, uint32_t key_len);
  // Whether the item `d` (not settled; hash and length already matched) holds `key`: by
  // fingerprint, or by reading its key where the fingerprint is unknown.
  bool same_key(const Desc& d, const void* key, uint32_t key_len, uint64_t fp);
  void reclaim_oldest();                       // whatever its state: an atomic swap
  void free_head(uint64_t seq, uint64_t old);  // after the state word turned FREE
  // Reads the state words of up to kStateBatch items from `seq` (not past the tail or the end
  // of the descriptor array) into states_; returns how many.
  uint32_t read_states(uint64_t seq);
  void publish_cursors();
  // Makes the items from unpublished_from_ to Tail visible: their state words, bucket heads, the
  // cursors and the counters. No DMA when there are none.
  void publish();

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  Cursors cur_{};
  std::vector<uint64_t> buckets_;  // bucket heads (seqs)
  std::vector<Desc> desc_;         // by seq % desc_count
  bool batching_ = false;          // between begin_batch() and end_batch()
  uint64_t unpublished_from_ = 0;  // the first seq not yet published (== Tail when none)
  std::vector<uint64_t> record_;   // scratch: one record in agent memory
  uint64_t states_[kStateBatch * 4];  // scratch: whole descriptors as read (state is word 0 of 4)
};

// One LzProducer batch as a scope: begin_batch() at construction, end_batch() at destruction (a
// null producer: nothing).
class LzBatch {
 public:
  explicit LzBatch(LzProducer* zone) : zone_(zone) {
    if (zone_ != nullptr) zone_->begin_batch();
  }
  ~LzBatch() {
    if (zone_ != nullptr) zone_->end_batch();
  }
  LzBatch(const LzBatch&) = delete;
  LzBatch& operator=(const LzBatch&) = delete;

 private:
  LzProducer* zone_;
};

}  // namespace pd3
