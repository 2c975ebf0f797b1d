// request_reader.hpp — agent side of the request ring over HostDma (paper §6.1 step ①): one DMA
// read of the host's tail, one DMA read of the published bytes into agent memory, parsed there.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "dpu/host_layout.hpp"
#include "pd3/status.h"

namespace pd3 {

// One request as the agent sees it, in agent memory (valid during the callback only).
struct RequestView {
  pd3_request hdr;
  const uint8_t* payload;  // pd3_request_payload_len(&hdr) bytes (write data or key)
  uint32_t record_len;     // bytes of header + payload (the record as the transport carries it)
  uint64_t pos;            // the slot's ring position: compare with req_fence before answering
  int status;              // PD3_OK, or PD3_E_CORRUPT: answer with this status
  bool has_header;         // false: the slot is too short for a header, so there is no id to answer
};

// The consumer of the request ring. Single-threaded (the engine's); keeps the head it owns.
class RequestReader {
 public:
  // Bytes read per DMA at most (a larger slot gets a read of its own).
  static constexpr uint64_t kWindowBytes = 64 * 1024;

  // Reads the head it resumes from (one read).
  RequestReader(HostDma& dma, const HostLayout& layout, AgentCounters& counters)
      : dma_(dma), l_(layout), counters_(counters), head_(dma.read64(PD3_CTL(req_head))), tail_seen_(head_) {}

  // The host's fence (pd3_control.req_fence), one acquire read: requests below it were failed by
  // the host (pairs with its release store when it declares the agent down).
  uint64_t fence() { return dma_.read64(PD3_CTL(req_fence)); }

  // Calls fn(const RequestView&) for every contiguous published request, up to `max`, then frees
  // them all with one write of the head. Requests below `fence` are discarded unseen (counted in
  // agent_fenced). Records whose length disagrees with their header still reach fn (status
  // PD3_E_CORRUPT) so their ids can be answered with an error. Returns the number of records taken
  // (fenced ones included), or PD3_E_CORRUPT when a slot's framing is broken: nothing past that
  // slot is taken (a ring whose framing is lost cannot be resynchronised).
  // DMA: a read of req_tail, then one read per window of ring bytes (one in the common case),
  // then a posted write of req_head; none when the ring is empty.
  template <class Fn>
  int drain(uint32_t max, uint64_t fence, Fn&& fn);
  template <class Fn>
  int drain(uint32_t max, Fn&& fn) { return drain(max, fence(), std::forward<Fn>(fn)); }

  // Is the slot at head published? One read (the engine's last look before it sleeps).
  bool published_at_head() { return dma_.read64(l_.req_offset + (head_ & (l_.req_size - 1))) == l_.seal_of(head_); }

  uint64_t head() const { return head_; }
  uint64_t tail_seen() const { return tail_seen_; }  // the host's tail at the last drain

 private:
  // A slot in buf_ at `at`, of ring position `pos`: its length if published and well framed, 0 if
  // not published, -1 if its framing is broken.
  int64_t slot_at(size_t at, uint64_t pos) const;

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  uint64_t head_;
  uint64_t tail_seen_;
  std::vector<uint64_t> buf_;  // ring bytes in agent memory (8-aligned)
};

inline int64_t RequestReader::slot_at(size_t at, uint64_t pos) const {
  pd3_slot s;
  std::memcpy(&s, reinterpret_cast<const uint8_t*>(buf_.data()) + at, sizeof s);
  if (s.seal != l_.seal_of(pos)) return 0;
  const bool framed = s.length >= sizeof(pd3_slot) && s.length % PD3_SLOT_ALIGN == 0 &&
                      (pos & (l_.req_size - 1)) + s.length <= l_.req_size &&
                      (s.kind == PD3_SLOT_RECORD || s.kind == PD3_SLOT_PAD);
  return framed ? int64_t(s.length) : -1;
}

template <class Fn>
int RequestReader::drain(uint32_t max, uint64_t fence, Fn&& fn) {
  // The host advances tail when it reserves, before it writes: everything published is below it.
  const uint64_t tail = dma_.read64(PD3_CTL(req_tail));
  tail_seen_ = tail;
  const uint64_t mask = l_.req_size - 1;
  uint64_t pos = head_;
  uint64_t taken = 0, fenced = 0;
  int rc = 0;
  bool unpublished = false;  // met a slot not yet sealed: the batch ends there
  // A tail behind head or more than a ring ahead is impossible: read at most one ring. Slots are
  // PD3_SLOT_ALIGN-aligned, so an unaligned tail is rounded up (the slot there is then judged).
  const uint64_t reserved = int64_t(tail - pos) > 0 ? std::min(tail - pos, l_.req_size) : 0;
  const uint64_t end = pos + ((reserved + PD3_SLOT_ALIGN - 1) & ~uint64_t{PD3_SLOT_ALIGN - 1});
  while (taken < max && pos < end && rc == 0 && !unpublished) {
    const uint64_t off = pos & mask;
    uint64_t want = std::min({end - pos, l_.req_size - off, uint64_t{kWindowBytes}});
    if (want < sizeof(pd3_slot)) break;
    buf_.resize((std::max(want, uint64_t{kWindowBytes}) + 7) / 8);
    dma_.read(l_.req_offset + off, buf_.data(), want);
    size_t at = 0;
    while (taken < max && at + sizeof(pd3_slot) <= want) {
      const int64_t len = slot_at(at, pos);
      if (len == 0) {
        unpublished = true;
        break;
      }
      if (len < 0) {
        rc = PD3_E_CORRUPT;
        break;
      }
      if (at + uint64_t(len) > want) {
        if (at > 0) break;  // read again from this slot
        want = uint64_t(len);  // a slot larger than the window: one read of it alone
        buf_.resize(want / 8);
        dma_.read(l_.req_offset + off, buf_.data(), want);
      }
      const uint8_t* slot = reinterpret_cast<const uint8_t*>(buf_.data()) + at;
      uint16_t kind;
      std::memcpy(&kind, slot + offsetof(pd3_slot, kind), sizeof kind);
      if (kind == PD3_SLOT_RECORD) {
        ++taken;
        if (pos < fence) {
          ++fenced;
        } else {
          RequestView v{};
          v.payload = slot + sizeof(pd3_slot) + sizeof(pd3_request);
          v.pos = pos;
          v.has_header = uint64_t(len) >= sizeof(pd3_slot) + sizeof(pd3_request);
          if (!v.has_header) {
            v.status = PD3_E_CORRUPT;
          } else {
            std::memcpy(&v.hdr, slot + sizeof(pd3_slot), sizeof v.hdr);
            const uint64_t body = sizeof(pd3_request) + uint64_t(pd3_request_payload_len(&v.hdr));
            const uint64_t need = (sizeof(pd3_slot) + body + PD3_SLOT_ALIGN - 1) & ~uint64_t{PD3_SLOT_ALIGN - 1};
            v.status = need == uint64_t(len) ? PD3_OK : PD3_E_CORRUPT;
            v.record_len = v.status == PD3_OK ? uint32_t(body) : 0;
          }
          if (v.status != PD3_OK) counters_.add(AgentCounters::kCorrupt);
          fn(static_cast<const RequestView&>(v));
        }
      }
      pos += uint64_t(len);
      at += size_t(len);
    }
  }
  if (pos != head_) {
    head_ = pos;
    // Posted: the reads of the freed bytes completed before it was issued (read() returns then).
    dma_.write64(PD3_CTL(req_head), pos);
  }
  if (taken > 0) {
    counters_.add(AgentCounters::kBatches);
    counters_.add(AgentCounters::kRequests, taken);
  }
  if (fenced > 0) counters_.add_fenced(fenced);
  if (rc == PD3_E_CORRUPT) counters_.add(AgentCounters::kCorrupt);
  counters_.flush(dma_);
  return rc < 0 ? rc : int(taken);
}

}  // namespace pd3
