// response_writer.cpp — see response_writer.hpp.
#include "dpu/response_writer.hpp"

#include <algorithm>
#include <cstring>

#include "common/slot_records.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// The longest batch slot the writer builds: a host drains a slot whole, so a bound keeps one
// drain's work (and the first slot's wait for its seal) short.
constexpr uint64_t kMaxBatchSlot = 64 * 1024;

}  // namespace

ResponseWriter::ResponseWriter(HostDma& dma, const HostLayout& layout, AgentCounters& counters)
    : dma_(dma), l_(layout), counters_(counters), tail_(dma.read64(PD3_CTL(resp_tail))),
      head_seen_(dma.read64(PD3_CTL(resp_head))) {}

void ResponseWriter::repair() {
  // The published run from the host's head: slots are read one header at a time (recovery only).
  uint64_t pos = dma_.read64(PD3_CTL(resp_head));
  const uint64_t mask = l_.resp_size - 1;
  while (pos < tail_) {
    pd3_slot s;
    dma_.read(l_.resp_offset + (pos & mask), &s, sizeof s);
    if (s.seal != l_.seal_of(pos) || s.length < sizeof(pd3_slot) || s.length % PD3_SLOT_ALIGN != 0 ||
        (pos & mask) + s.length > l_.resp_size)
      break;
    pos += s.length;
  }
  while (pos < tail_) {  // PAD slots over [pos, tail), split at the ring's end
    const uint64_t len = std::min(l_.resp_size - (pos & mask), tail_ - pos);
    const pd3_slot pad{0, uint32_t(len), PD3_SLOT_PAD, 0};
    dma_.write(l_.resp_offset + (pos & mask), &pad, sizeof pad);
    dma_.fence();
    dma_.write64(l_.resp_offset + (pos & mask), l_.seal_of(pos));
    pos += len;
  }
}

bool ResponseWriter::room_for(uint64_t bytes) {
  if (tail_ + bytes - head_seen_ <= l_.resp_size) return true;
  // acquire (read64): the host's reads of the bytes it freed are done before we reuse them.
  head_seen_ = dma_.read64(PD3_CTL(resp_head));
  return tail_ + bytes - head_seen_ <= l_.resp_size;
}

void ResponseWriter::stage_through(uint64_t end) {
  // Grown geometrically and never shrunk or zero-filled: only the slots' padding is cleared below.
  if (stage_.size() * 8 < end) stage_.resize(std::max<size_t>(end / 8, 2 * stage_.size()));
  // A slot's padding (under PD3_SLOT_ALIGN bytes) lies in its last two words: zeroed before the
  // record that ends there is written over the rest of them.
  stage_[end / 8 - 1] = 0;
  stage_[end / 8 - 2] = 0;
}

uint64_t ResponseWriter::stage_slot(uint64_t len, uint16_t kind, uint16_t count) {
  if (staged_bytes_ == 0) batch_pos_ = tail_;
  const uint64_t at = staged_bytes_;
  stage_through(at + len);
  // The first slot's seal stays 0 (unpublished) until flush() has fenced the rest.
  const pd3_slot s{at == 0 ? 0 : l_.seal_of(tail_), uint32_t(len), kind, count};
  std::memcpy(staged_at(at), &s, sizeof s);
  tail_ += len;
  staged_bytes_ += len;
  return at;
}

bool ResponseWriter::extend_open_slot(uint64_t span, uint64_t* record_at) {
  if (open_slot_ == kNoOpenSlot) return false;
  const uint64_t was = slot_len(open_spans_);
  const uint64_t len = slot_len(open_spans_ + span);
  const uint64_t slot_pos = batch_pos_ + open_slot_;
  if (open_count_ == PD3_SLOT_MAX_RECORDS || len > std::min(kMaxBatchSlot, l_.resp_size / 2) ||
      (slot_pos & (l_.resp_size - 1)) + len > l_.resp_size || !room_for(len - was))
    return false;
  if (len > was) {
    stage_through(open_slot_ + len);
    tail_ += len - was;
    staged_bytes_ += len - was;
  }
  *record_at = open_slot_ + sizeof(pd3_slot) + open_spans_;
  open_spans_ += span;
  ++open_count_;
  return true;
}

void ResponseWriter::close_open_slot() {
  if (open_slot_ == kNoOpenSlot) return;
  pd3_slot s;
  std::memcpy(&s, staged_at(open_slot_), sizeof s);
  s.length = uint32_t(slot_len(open_spans_));
  s.count = uint16_t(open_count_);
  std::memcpy(staged_at(open_slot_), &s, sizeof s);
  open_slot_ = kNoOpenSlot;
}

int ResponseWriter::add(uint16_t op_id, int status, const void* data, uint32_t size) {
  const pd3_response hdr{op_id, uint16_t(status < 0 ? -status : status), size};
  const uint32_t data_len = pd3_response_data_len(&hdr);
  const uint64_t span = record_span(sizeof hdr + uint64_t(data_len));
  const uint64_t len = slot_len(span);
  if (len > l_.resp_size / 2) return PD3_E_TOO_BIG;
  uint64_t at;
  if (!extend_open_slot(span, &at)) {
    const uint64_t off = tail_ & (l_.resp_size - 1);
    const uint64_t pad = off + len > l_.resp_size ? l_.resp_size - off : 0;
    if (!room_for(pad + len)) return PD3_E_AGAIN;
    close_open_slot();
    if (pad) (void)stage_slot(pad, PD3_SLOT_PAD, 0);
    open_slot_ = stage_slot(len, PD3_SLOT_RECORDS, 1);
    open_spans_ = span;
    open_count_ = 1;
    at = open_slot_ + sizeof(pd3_slot);
  }
  std::memcpy(staged_at(at), &hdr, sizeof hdr);
  if (data_len) std::memcpy(staged_at(at + sizeof hdr), data, data_len);
  ++staged_;
  return PD3_OK;
}

uint32_t ResponseWriter::flush() {
  if (staged_bytes_ == 0) return 0;
  close_open_slot();
  // The reservation first, so that an agent that dies before the seal leaves a hole the next
  // one can see and pad (repair()).
  dma_.write64(PD3_CTL(resp_tail), tail_);
  const uint64_t bytes = staged_bytes_;
  const uint64_t off = batch_pos_ & (l_.resp_size - 1);
  const uint64_t first = std::min(bytes, l_.resp_size - off);  // the part before the ring's end
  const auto* src = reinterpret_cast<const uint8_t*>(stage_.data());
  dma_.write(l_.resp_offset + off, src, first);
  if (first < bytes) dma_.write(l_.resp_offset, src + first, bytes - first);
  // The host reads slots in order from its head and stops at the first unsealed one, so the bytes
  // of every later slot (their seals included) are safe once they are visible before this seal.
  dma_.fence();
  dma_.write64(l_.resp_offset + off, l_.seal_of(batch_pos_));
  const uint32_t n = staged_;
  counters_.add(AgentCounters::kResponses, n);
  counters_.flush(dma_);
  staged_ = 0;
  staged_bytes_ = 0;
  wake_host();
  return n;
}

void ResponseWriter::wake_host() {
  // The host's side is wait_for_responses (native/host/completion_doorbell.hpp). kAll: our count
  // (just written) is visible before we look for sleepers, and the host fences between counting
  // itself a sleeper and looking at the count: one of us sees the other.
  dma_.fence(DmaFence::kAll);
  if (dma_.read32(PD3_CTL(host_sleeping)) == 0) return;
  const uint64_t at = dma_.read64(PD3_CTL(host_wake_at));
  if (counters_.get(AgentCounters::kResponses) < at) return;
  // Reset only the target we saw: a lower one stored since is a sleeper's that still waits.
  uint64_t found;
  (void)dma_.cas64(PD3_CTL(host_wake_at), at, PD3_WAKE_NEVER, &found);
  dma_.wake32(PD3_CTL(host_doorbell));  // every sleeper: each re-arms if it wants more
}

}  // namespace pd3
