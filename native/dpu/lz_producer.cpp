// lz_producer.cpp — producing, cleaning, reclaiming and invalidating Loading Zone items over HostDma.
#include "dpu/lz_producer.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "common/lz_state.hpp"
#include "dpu/cuckoo_set.hpp"
#include "pd3/status.h"

namespace pd3 {

static_assert(sizeof(pd3_lz_desc) == 32 && offsetof(pd3_lz_desc, next_seq) == 8, "descriptor: state, then fields");
static_assert(sizeof(pd3_lz_desc) - offsetof(pd3_lz_desc, next_seq) == 24, "24 bytes of fields after the state word");
static_assert(PD3_CTL(lz_data_head) - PD3_CTL(lz_tail_seq) == 24, "the four LZ cursors are one line, in order");

LzProducer::LzProducer(HostDma& dma, const HostLayout& layout, AgentCounters& counters)
    : dma_(dma), l_(layout), counters_(counters), buckets_(layout.lz_bucket_count), desc_(layout.lz_desc_count) {
  dma_.read(PD3_CTL(lz_tail_seq), &cur_, sizeof cur_);
  unpublished_from_ = cur_.tail_seq;
  dma_.read(l_.lz_bucket_offset, buckets_.data(), buckets_.size() * 8);
  std::vector<pd3_lz_desc> host(l_.lz_desc_count);
  dma_.read(l_.lz_desc_offset, host.data(), host.size() * sizeof(pd3_lz_desc));
  for (size_t i = 0; i < host.size(); ++i)
    desc_[i] = Desc{host[i].next_seq, host[i].data_pos, host[i].key_hash, host[i].record_len, kUnknownFingerprint};
}

uint64_t LzProducer::fingerprint(const void* key, uint32_t key_len) {
  const uint64_t fp = host_view_key_hash(key, key_len);
  return fp == kUnknownFingerprint || fp == kSettled ? 2 : fp;
}

void LzProducer::publish_cursors() { dma_.write(PD3_CTL(lz_tail_seq), &cur_, sizeof cur_); }

void LzProducer::free_head(uint64_t seq, uint64_t old) {
  switch (lz_state_of(old)) {
    case PD3_LZ_PRODUCED: counters_.add(AgentCounters::kLzReclaimedUnconsumed); break;
    case PD3_LZ_CONSUMED: counters_.add(AgentCounters::kLzConsumed); break;
    default: break;  // INVALID was counted when it was withdrawn
  }
  const Desc& d = desc_[seq & (l_.lz_desc_count - 1)];
  cur_.head_seq = seq + 1;
  // With no item left, Head catches up with Tail (this also frees trailing PAD bytes).
  cur_.data_head = cur_.head_seq == cur_.tail_seq ? cur_.data_tail : d.data_pos + d.record_len;
}

void LzProducer::reclaim_oldest() {
  // The zone is full of this batch's items: they go out before the oldest of them is reclaimed.
  if (cur_.head_seq >= unpublished_from_) publish();
  const uint64_t seq = cur_.head_seq;
  // Atomic swap (acq_rel): if a consumer's CAS took the item first, its copy of the bytes happens
  // before we reuse them; the FREE word makes every later consumer CAS fail.
  const uint64_t old = dma_.swap64(l_.desc_at(seq), lz_state(seq, PD3_LZ_FREE));
  // The descriptor fields and record bytes are rewritten only after this point, so a consumer
  // that reads any rewritten field also sees the FREE word when it re-checks (seqlock).
  dma_.fence();
  free_head(seq, old);
}

uint32_t LzProducer::read_states(uint64_t seq) {
  const uint64_t index = seq & (l_.lz_desc_count - 1);
  const uint64_t n = std::min<uint64_t>({kStateBatch, cur_.tail_seq - seq, l_.lz_desc_count - index});
  if (n > 0) dma_.read(l_.desc_at(seq), states_, n * sizeof(pd3_lz_desc));  // acquire: see the consumers' CAS
  return uint32_t(n);
}

int64_t LzProducer::produce(uint16_t op_id, const void* key, uint32_t key_len, const void* data, uint32_t size) {
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN || size == 0 || size > PD3_MAX_ITEM_SIZE ||
      data == nullptr)
    return PD3_E_INVAL;
  const uint64_t len = pd3_lz_record_len(key_len, size);
  if (len > l_.lz_data_size) return PD3_E_TOO_BIG;

  // Make room: a free descriptor, and `len` contiguous bytes (a record never wraps).
  while (pending() >= l_.lz_desc_count) reclaim_oldest();
  uint64_t pos = cur_.data_tail;
  const uint64_t off = pos & (l_.lz_data_size - 1);
  if (off + len > l_.lz_data_size) pos += l_.lz_data_size - off;  // skip to the ring's start
  for (;;) {
    if (pending() == 0) {
      cur_.data_head = pos;  // empty zone: the skipped bytes hold nothing
      break;
    }
    if (pos + len - cur_.data_head <= l_.lz_data_size) break;
    reclaim_oldest();
  }

  const uint64_t seq = cur_.tail_seq;
  const uint32_t hash = pd3_lz_key_hash(key, key_len);
  record_.assign(len / 8, 0);
  auto* rec = reinterpret_cast<uint8_t*>(record_.data());
  const pd3_lz_record hdr{seq, op_id, uint16_t(key_len), size};
  std::memcpy(rec, &hdr, sizeof hdr);
  std::memcpy(rec + sizeof hdr, key, key_len);
  std::memcpy(rec + sizeof hdr + pd3_align8(key_len), data, size);
  dma_.write(l_.lz_data_at(pos), rec, len);

  const uint64_t bucket = hash & (l_.lz_bucket_count - 1);
  Desc& d = desc_[seq & (l_.lz_desc_count - 1)];
  d = Desc{buckets_[bucket], pos, hash, uint32_t(len), fingerprint(key, key_len)};
  dma_.write(l_.desc_at(seq) + 8, &d, kHostFieldBytes);
  buckets_[bucket] = seq;  // the host's head moves when the item is published
  cur_.data_tail = pos + len;
  cur_.tail_seq = seq + 1;
  counters_.add(AgentCounters::kLzProduced);
  if (!batching_) publish();
  return int64_t(seq);
}

void LzProducer::begin_batch() {
  assert(!batching_ && "batches do not nest");
  batching_ = true;
}

void LzProducer::end_batch() {
  batching_ = false;
  publish();
}

void LzProducer::publish() {
  const uint64_t first = unpublished_from_;
  if (first == cur_.tail_seq) return;
  // Record bytes and descriptor fields are visible to whoever sees a state word.
  dma_.fence();
  for (uint64_t seq = first; seq < cur_.tail_seq; ++seq) dma_.write64(l_.desc_at(seq), lz_state(seq, PD3_LZ_PRODUCED));
  // A consumer that sees a bucket head finds the descriptors it leads to already published; Tail
  // (the Fig. 9 scan bound) likewise. Each bucket gets its newest head (written once per item:
  // the same value again for a bucket two items share).
  dma_.fence();
  for (uint64_t seq = first; seq < cur_.tail_seq; ++seq) {
    const uint64_t bucket = desc_[seq & (l_.lz_desc_count - 1)].key_hash & (l_.lz_bucket_count - 1);
    dma_.write64(l_.bucket_at(bucket), buckets_[bucket]);
  }
  unpublished_from_ = cur_.tail_seq;
  publish_cursors();
  counters_.flush(dma_);
}

uint32_t LzProducer::clean() {
  publish();  // as every method but produce(): the batch's items are the zone's before anything else
  uint32_t freed = 0;
  bool blocked = false;
  while (pending() > 0 && !blocked) {
    const uint64_t first = cur_.head_seq;
    const uint32_t n = read_states(first);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t word = states_[4 * i];
      if (lz_state_of(word) == PD3_LZ_PRODUCED) {
        blocked = true;
        break;
      }
      // No consumer changes a word that is not PRODUCED: a plain write frees it (the read above
      // was an acquire, so a consumer's copy happened before).
      dma_.write64(l_.desc_at(first + i), lz_state(first + i, PD3_LZ_FREE));
      free_head(first + i, word);
      ++freed;
    }
  }
  if (freed > 0) {
    dma_.fence();  // FREE words before any rewrite of the freed bytes (as in reclaim_oldest)
    publish_cursors();
    counters_.flush(dma_);
  }
  return freed;
}

uint32_t LzProducer::invalidate(const void* key, uint32_t key_len) {
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN) return 0;
  publish();  // an unpublished item's CAS would fail, and it would be published PRODUCED after
  const uint32_t hash = pd3_lz_key_hash(key, key_len);
  const uint64_t oldest = cur_.head_seq;
  uint32_t withdrawn = 0;
  const uint64_t key_words = (sizeof(pd3_lz_record) + pd3_align8(key_len)) / 8;
  const uint64_t fp = fingerprint(key, key_len);
  // This thread wrote every link, so the chain is walked in agent memory.
  for (uint64_t seq = buckets_[hash & (l_.lz_bucket_count - 1)]; seq >= oldest && seq != 0;) {
    Desc& d = desc_[seq & (l_.lz_desc_count - 1)];
    if (d.key_fp != kSettled && d.key_hash == hash && d.record_len >= key_words * 8 && same_key(d, key, key_len, fp)) {
      uint64_t found;
      // Won or lost, the item is PRODUCED no more for this seq: no later walk needs to try it.
      d.key_fp = kSettled;
      // Atomic CAS (acq_rel): a consumer that wins instead took the value before the invalidating
      // write was seen, which is the order the Transfer Engine observed; after ours none can win.
      if (dma_.cas64(l_.desc_at(seq), lz_state(seq, PD3_LZ_PRODUCED), lz_state(seq, PD3_LZ_INVALID), &found)) {
        ++withdrawn;
        counters_.add(AgentCounters::kLzInvalidated);
      }
    }
    seq = d.next_seq;
  }
  if (withdrawn > 0) counters_.flush(dma_);
  return withdrawn;
}

bool LzProducer::same_key(const Desc& d, const void* key, uint32_t key_len, uint64_t fp) {
  if (d.key_fp != kUnknownFingerprint) return d.key_fp == fp;
  // Produced by an agent before a restart: compare the key in the record, read back from the host.
  const uint64_t key_words = (sizeof(pd3_lz_record) + pd3_align8(key_len)) / 8;
  record_.resize(key_words);
  dma_.read(l_.lz_data_at(d.data_pos), record_.data(), key_words * 8);
  pd3_lz_record hdr;
  std::memcpy(&hdr, record_.data(), sizeof hdr);
  return hdr.key_len == key_len && std::memcmp(record_.data() + 2, key, key_len) == 0;
}

uint32_t LzProducer::invalidate_all() {
  publish();
  uint32_t withdrawn = 0;
  for (uint64_t seq = cur_.head_seq; seq < cur_.tail_seq;) {
    const uint32_t n = read_states(seq);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t found;
      // As in invalidate(): a consumer that wins took the item before; after our CAS none can.
      if (states_[4 * i] == lz_state(seq + i, PD3_LZ_PRODUCED) &&
          dma_.cas64(l_.desc_at(seq + i), lz_state(seq + i, PD3_LZ_PRODUCED), lz_state(seq + i, PD3_LZ_INVALID),
                     &found)) {
        ++withdrawn;
        counters_.add(AgentCounters::kLzInvalidated);
      }
    }
    seq += n;
  }
  if (withdrawn > 0) counters_.flush(dma_);
  return withdrawn;
}

}  // namespace pd3
