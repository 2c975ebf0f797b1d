// lz_consumer.cpp — checkAndReturn over the indexed Loading Zone (see lz_view.hpp for the design).
#include "host/lz_consumer.hpp"

#include <atomic>

#include "common/atomics.hpp"
#include "pd3/status.h"

namespace pd3 {

int64_t lz_check_and_return(const LzView& zone, const void* key, uint32_t key_len, void* dest,
                            uint32_t dest_cap) {
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN || (dest == nullptr && dest_cap != 0))
    return PD3_E_INVAL;
  const uint32_t hash = pd3_lz_key_hash(key, key_len);
  // acquire: pairs with the producer's release store of the bucket head, so the descriptor it
  // names (and that descriptor's record) is fully written before we read it.
  uint64_t seq = aref(zone.bucket_of(hash)).load(std::memory_order_acquire);
  // A chain can never be longer than the number of live items; the bound only guards a corrupt zone.
  for (uint64_t steps = 0; seq != 0 && steps <= zone.desc_mask; ++steps) {
    pd3_lz_desc& d = zone.desc_of(seq);
    // acquire: if the word names `seq`, the producer's writes of this item happened before.
    const uint64_t word = aref(d.state).load(std::memory_order_acquire);
    if (lz_seq_of(word) != seq || lz_state_of(word) == PD3_LZ_FREE) return 0;  // reclaimed: older ones too
    // relaxed field reads, validated below: the producer only rewrites a descriptor after it has
    // exchanged its state word to FREE (and fenced), so an unchanged word proves them consistent.
    const uint64_t next = load_relaxed(d.next_seq);
    const uint64_t pos = load_relaxed(d.data_pos);
    const uint32_t item_hash = load_relaxed(d.key_hash);
    const uint32_t record_len = load_relaxed(d.record_len);
    // acquire fence: orders the field reads above before the re-read of the state word (seqlock).
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t now = aref(d.state).load(std::memory_order_relaxed);
    // Fields are rewritten only after the word turns FREE: a word that still names `seq` and is not
    // FREE proves them consistent. (Another consumer taking this item only changes the state bits,
    // which must not end the walk: our key may be further down the chain.)
    if (lz_seq_of(now) != seq || lz_state_of(now) == PD3_LZ_FREE) return 0;  // reclaimed under us

    if (lz_state_of(now) == PD3_LZ_PRODUCED && item_hash == hash &&
        (pos & zone.data_mask) + record_len <= zone.data_size && record_len >= sizeof(pd3_lz_record)) {
      const uint64_t* rec = zone.record_words(pos);
      pd3_lz_record hdr;
      load_words(&hdr, rec, sizeof hdr);
      if (hdr.seq == seq && hdr.key_len == key_len && pd3_lz_record_len(key_len, hdr.size) == record_len &&
          equal_words(rec + sizeof hdr / 8, key, key_len)) {
        if (hdr.size > dest_cap) {
          // Only an item that is still there is "too large"; one reclaimed meanwhile is a miss.
          return aref(d.state).load(std::memory_order_acquire) == now ? PD3_E_DEST_SMALL : 0;
        }
        load_words(dest, rec + (sizeof hdr + pd3_align8(key_len)) / 8, hdr.size);
        uint64_t expected = now;
        // acq_rel: acquire so a winning CAS orders after the producer's publish; release so the
        // producer's later reclaim (an RMW that reads our CONSUMED) orders our copy before its
        // reuse of the bytes. On failure (another consumer won, or the item was reclaimed or
        // invalidated) the copy is discarded.
        if (aref(d.state).compare_exchange_strong(expected, lz_state(seq, PD3_LZ_CONSUMED),
                                                  std::memory_order_acq_rel, std::memory_order_relaxed))
          return int64_t(hdr.size);
      }
    }
    if (next >= seq) return 0;  // chains strictly decrease; anything else is corruption
    seq = next;
  }
  return 0;
}

}  // namespace pd3
