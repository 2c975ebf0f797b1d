// lz_producer.cpp — producing, cleaning, reclaiming and invalidating Loading Zone items.
#include "dpu/lz_producer.hpp"

#include <atomic>

#include "common/atomics.hpp"
#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// relaxed loads/stores of the agent-only cursors: only this thread writes them; consumers do not
// read them (they validate items through descriptor state words instead).
uint64_t get(uint64_t& cursor) { return aref(cursor).load(std::memory_order_relaxed); }
void set(uint64_t& cursor, uint64_t v) { aref(cursor).store(v, std::memory_order_relaxed); }

}  // namespace

uint64_t LzProducer::pending() const {
  return get(zone_.control->lz_tail_seq) - get(zone_.control->lz_head_seq);
}

void LzProducer::reclaim_oldest() {
  pd3_control* c = zone_.control;
  const uint64_t seq = get(c->lz_head_seq);
  pd3_lz_desc& d = zone_.desc_of(seq);
  // acq_rel exchange: acquire so that, if a consumer's CAS took the item first, its copy of the
  // bytes happens before we reuse them; the new FREE word makes every later consumer CAS fail.
  const uint64_t old = aref(d.state).exchange(lz_state(seq, PD3_LZ_FREE), std::memory_order_acq_rel);
  // release fence: the descriptor fields and record bytes are rewritten only after this point, so
  // a consumer that reads any rewritten field also sees the FREE word when it re-checks (seqlock).
  std::atomic_thread_fence(std::memory_order_release);
  switch (lz_state_of(old)) {
    case PD3_LZ_PRODUCED: count_by_agent(c->lz_reclaimed_unconsumed); break;
    case PD3_LZ_CONSUMED: count_by_agent(c->lz_consumed); break;
    default: break;  // INVALID was counted when it was withdrawn
  }
  const uint64_t next = seq + 1;
  set(c->lz_head_seq, next);
  // With no item left, Head catches up with Tail (this also frees trailing PAD bytes).
  set(c->lz_data_head, next == get(c->lz_tail_seq) ? get(c->lz_data_tail) : d.data_pos + d.record_len);
}

int64_t LzProducer::produce(uint16_t op_id, const void* key, uint32_t key_len, const void* data, uint32_t size) {
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN || size == 0 || size > PD3_MAX_ITEM_SIZE ||
      data == nullptr)
    return PD3_E_INVAL;
  pd3_control* c = zone_.control;
  const uint64_t len = pd3_lz_record_len(key_len, size);
  if (len > zone_.data_size) return PD3_E_TOO_BIG;

  // Make room: a free descriptor, and `len` contiguous bytes (a record never wraps).
  while (pending() >= zone_.desc_mask + 1) reclaim_oldest();
  uint64_t pos = get(c->lz_data_tail);
  const uint64_t off = pos & zone_.data_mask;
  if (off + len > zone_.data_size) pos += zone_.data_size - off;  // skip to the ring's start
  for (;;) {
    if (pending() == 0) {
      set(c->lz_data_head, pos);  // empty zone: the skipped bytes hold nothing
      break;
    }
    if (pos + len - get(c->lz_data_head) <= zone_.data_size) break;
    reclaim_oldest();
  }

  const uint64_t seq = get(c->lz_tail_seq);
  const uint32_t hash = pd3_lz_key_hash(key, key_len);
  uint64_t* rec = zone_.record_words(pos);
  const pd3_lz_record hdr{seq, op_id, uint16_t(key_len), size};
  store_words(rec, &hdr, sizeof hdr);
  store_words(rec + sizeof hdr / 8, key, key_len);
  store_words(rec + (sizeof hdr + pd3_align8(key_len)) / 8, data, size);

  pd3_lz_desc& d = zone_.desc_of(seq);
  uint64_t& head = zone_.bucket_of(hash);
  // relaxed field stores: published by the release store of the state word below.
  aref(d.next_seq).store(aref(head).load(std::memory_order_relaxed), std::memory_order_relaxed);
  aref(d.data_pos).store(pos, std::memory_order_relaxed);
  aref(d.key_hash).store(hash, std::memory_order_relaxed);
  aref(d.record_len).store(uint32_t(len), std::memory_order_relaxed);
  // release: record bytes and descriptor fields are visible to whoever acquires this word.
  aref(d.state).store(lz_state(seq, PD3_LZ_PRODUCED), std::memory_order_release);
  // release: a consumer that acquires the bucket head finds the descriptor already published.
  aref(head).store(seq, std::memory_order_release);

  set(c->lz_data_tail, pos + len);
  // release: Tail is the Fig. 9 scan bound; everything before it is published.
  aref(c->lz_tail_seq).store(seq + 1, std::memory_order_release);
  count_by_agent(c->lz_produced);
  return int64_t(seq);
}

uint32_t LzProducer::clean() {
  uint32_t freed = 0;
  while (pending() > 0) {
    const uint64_t seq = get(zone_.control->lz_head_seq);
    // acquire: see the consumer's CAS (and so order its copy before our reuse of the bytes).
    const uint64_t word = aref(zone_.desc_of(seq).state).load(std::memory_order_acquire);
    if (lz_state_of(word) == PD3_LZ_PRODUCED) break;
    reclaim_oldest();
    ++freed;
  }
  return freed;
}

uint32_t LzProducer::invalidate(const void* key, uint32_t key_len) {
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN) return 0;
  const uint32_t hash = pd3_lz_key_hash(key, key_len);
  const uint64_t oldest = get(zone_.control->lz_head_seq);
  uint32_t withdrawn = 0;
  // This thread wrote every link, so the chain is read without validation.
  for (uint64_t seq = get(zone_.bucket_of(hash)); seq >= oldest && seq != 0;) {
    pd3_lz_desc& d = zone_.desc_of(seq);
    const uint64_t* rec = zone_.record_words(d.data_pos);
    pd3_lz_record hdr;
    load_words(&hdr, rec, sizeof hdr);
    uint64_t expected = lz_state(seq, PD3_LZ_PRODUCED);
    // acq_rel: a consumer that wins instead took the value before the invalidating write was
    // seen, which is the order the Transfer Engine observed; after our CAS no consumer can win.
    if (d.key_hash == hash && hdr.key_len == key_len && equal_words(rec + 2, key, key_len) &&
        aref(d.state).compare_exchange_strong(expected, lz_state(seq, PD3_LZ_INVALID),
                                              std::memory_order_acq_rel, std::memory_order_relaxed)) {
      ++withdrawn;
      count_by_agent(zone_.control->lz_invalidated);
    }
    seq = d.next_seq;
  }
  return withdrawn;
}

uint32_t LzProducer::invalidate_all() {
  uint32_t withdrawn = 0;
  const uint64_t tail = get(zone_.control->lz_tail_seq);
  for (uint64_t seq = get(zone_.control->lz_head_seq); seq < tail; ++seq) {
    uint64_t expected = lz_state(seq, PD3_LZ_PRODUCED);
    // acq_rel: as in invalidate(): a consumer that wins took the item before; after our CAS none can.
    if (aref(zone_.desc_of(seq).state)
            .compare_exchange_strong(expected, lz_state(seq, PD3_LZ_INVALID), std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
      ++withdrawn;
      count_by_agent(zone_.control->lz_invalidated);
    }
  }
  return withdrawn;
}

}  // namespace pd3
