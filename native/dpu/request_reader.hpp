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
  // Bytes read per DMA at most (a larger slot gets a read of its own), and at least.
  static constexpr uint64_t kWindowBytes = 64 * 1024;
  static constexpr uint64_t kMinWindowBytes = 256;

  // Reads the head it resumes from (one read).
  RequestReader(HostDma& dma, const HostLayout& layout, AgentCounters& counters)
      : dma_(dma), l_(layout), counters_(counters), head_(dma.read64(PD3_CTL(req_head))) {}

  // The host's fence (pd3_control.req_fence), one acquire read: requests below it were failed by
  // the host (pairs with its release store when it declares the agent down).
  uint64_t fence() { return dma_.read64(PD3_CTL(req_fence)); }

  // Calls fn(const RequestView&) for every contiguous published request, up to `max`, then frees
  // them all with one write of the head. Requests below `fence` are discarded unseen (counted in
  // agent_fenced). Records whose length disagrees with their header still reach fn (status
  // PD3_E_CORRUPT) so their ids can be answered with an error. Returns the number of records taken
  // (fenced ones included), or PD3_E_CORRUPT when a slot's framing is broken: nothing past that
  // slot is taken (a ring whose framing is lost cannot be resynchronised).
  // DMA: a read of the seal at head (all an empty ring costs), then one read per window of ring
  // bytes from head (one in the common case: the window is sized from the last batch, and bytes
  // past the last sealed slot are read and ignored), then a posted write of req_head. The host's
  // req_tail is not read: the producers CAS it on every request.
  template <class Fn>
  int drain(uint32_t max, uint64_t fence, Fn&& fn);
  template <class Fn>
  int drain(uint32_t max, Fn&& fn) { return drain(max, fence(), std::forward<Fn>(fn)); }

  // Is the slot at head published? One read (the engine's last look before it sleeps).
  bool published_at_head() { return dma_.read64(l_.req_offset + (head_ & (l_.req_size - 1))) == l_.seal_of(head_); }

  uint64_t head() const { return head_; }
  // Bytes the host has reserved past our head (one read of req_tail; for gauges, not per pass).
  uint64_t backlog() {
    const uint64_t tail = dma_.read64(PD3_CTL(req_tail));
    return tail > head_ ? tail - head_ : 0;
  }

 private:
  // A slot in buf_ at `at`, of ring position `pos`: its length if published and well framed, 0 if
  // not published, -1 if its framing is broken.
  int64_t slot_at(size_t at, uint64_t pos) const;

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  uint64_t head_;
  uint64_t window_ = kMinWindowBytes;  // bytes the next pass reads first
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
  // The seal at head first: an empty ring costs this one read, and the producers' req_tail line
  // (which they CAS on every request) is never pulled away from them.
  if (!published_at_head()) return 0;
  const uint64_t mask = l_.req_size - 1;
  uint64_t pos = head_;
  uint64_t taken = 0, fenced = 0;
  int rc = 0;
  bool unpublished = false;  // met a slot not yet sealed: the batch ends there
  uint64_t window = window_;
  while (taken < max && rc == 0 && !unpublished && pos - head_ < l_.req_size) {
    const uint64_t off = pos & mask;
    uint64_t want = std::min(window, l_.req_size - off);  // never past the ring's end
    buf_.resize((std::max(want, uint64_t{kWindowBytes}) + 7) / 8);
    dma_.read(l_.req_offset + off, buf_.data(), want);
    size_t at = 0;
    while (taken < max && at + sizeof(pd3_slot) <= want && pos - head_ < l_.req_size) {
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
    window = std::min(2 * window, uint64_t{kWindowBytes});  // the batch goes on: read more at once
  }
  // The next pass reads what this one took and a little more (a burst grows it, a trickle shrinks
  // it): the bytes past the last sealed slot are read for nothing.
  window_ = std::clamp<uint64_t>(pos - head_ + kMinWindowBytes, kMinWindowBytes, kWindowBytes);
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
