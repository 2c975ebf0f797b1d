// lz_producer.hpp — the agent's side of the Loading Zone: produce items, clean Head, reclaim, invalidate.
#pragma once

#include <cstdint>

#include "common/lz_view.hpp"

namespace pd3 {

// Producer of one segment's Loading Zone. Single-threaded by contract: every method must be called
// from the same thread (the Transfer Engine's, docs/architecture.md §8), which is what orders Host View
// and zone changes. Cursors live in the segment's control block, so a restarted agent resumes.
class LzProducer {
 public:
  explicit LzProducer(pd3_control* c) : zone_(c) {}

  // Publishes an item (paper §6.2 prefetch response → §7.2 zone item). If the zone lacks room,
  // the oldest items are reclaimed whatever their state. Returns the item's seq (> 0), or
  // PD3_E_INVAL (empty key, key > 65535 bytes, or size 0: an empty item could not be told from a
  // miss) or PD3_E_TOO_BIG (the record could never fit the data ring).
  int64_t produce(uint16_t op_id, const void* key, uint32_t key_len, const void* data, uint32_t size);

  // Advances Head past items that are no longer PRODUCED (consumed or invalidated), freeing their
  // space. Stops at the first PRODUCED item. Returns the number of items freed.
  uint32_t clean();

  // Withdraws every PRODUCED item of `key` (a newer write or delete of the key was seen), so no
  // consumer can take it afterwards. Returns the number withdrawn.
  uint32_t invalidate(const void* key, uint32_t key_len);

  // Withdraws every PRODUCED item, whatever its key (an invalidation of some unknown key may have
  // been missed: docs/prefetcher.md). Returns the number withdrawn.
  uint32_t invalidate_all();

  // Items published and not yet freed (any state).
  uint64_t pending() const;

 private:
  void reclaim_oldest();

  LzView zone_;
};

}  // namespace pd3
