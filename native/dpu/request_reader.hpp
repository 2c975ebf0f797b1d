// request_reader.hpp — agent side of the request ring over HostDma (paper §6.1 step ①): one DMA
// read of the host's tail, one DMA read of the published bytes into agent memory, parsed there.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/slot_records.hpp"
#include "dpu/host_layout.hpp"
#include "pd3/status.h"

namespace pd3 {

// Bytes of the request record that starts at `rec` (header and payload), from its header.
inline uint64_t request_record_len(const uint8_t* rec) {
  pd3_request hdr;
  std::memcpy(&hdr, rec, sizeof hdr);
  return sizeof hdr + uint64_t(pd3_request_payload_len(&hdr));
}

// One request as the agent sees it, in agent memory (valid during the callback only).
struct RequestView {
  pd3_request hdr;
  const uint8_t* payload;  // pd3_request_payload_len(&hdr) bytes (write data or key)
  uint32_t record_len;     // bytes of header + payload (the record as the transport carries it)
  uint64_t pos;            // its slot's ring position (a batch's records share it): compare with req_fence
                           // before answering
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

  // Calls fn(const RequestView&) for every contiguous published request, up to `max` (a batch slot
  // is taken whole: a pass stops before one that would take it past `max`, unless it is the pass's
  // first slot), then frees them all with one write of the head. Requests below `fence` are
  // discarded unseen (counted in agent_fenced). A one-record slot whose length disagrees with its
  // header still reaches fn (status PD3_E_CORRUPT) so its id can be answered with an error. Returns
  // the number of records taken (fenced ones included), or PD3_E_CORRUPT when a slot's framing is
  // broken (its length or kind, or the records of a batch slot not filling it exactly): nothing
  // from that slot on is taken (a ring whose framing is lost cannot be resynchronised).
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
  // not published, -1 if its framing is broken. Only the header is judged when the slot lies past
  // `limit` bytes of buf_ (the caller reads it whole before taking it).
  int64_t slot_at(size_t at, uint64_t pos, uint64_t limit) const;
  pd3_slot header_at(size_t at) const {
    pd3_slot s;
    std::memcpy(&s, bytes() + at, sizeof s);
    return s;
  }
  auto records_at(size_t at, pd3_slot s) const {  // s: the slot header at `at`, copied out of buf_
    // A lambda, not the function itself: its own type, so the walk inlines it.
    return slot_records<sizeof(pd3_request)>(bytes() + at + sizeof(pd3_slot), s.length - sizeof(pd3_slot), s.count,
                                             [](const uint8_t* rec) { return request_record_len(rec); });
  }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(buf_.data()); }
  // Reads `len` ring bytes at ring offset `off` into buf_.
  void read_window(uint64_t off, uint64_t len) {
    if (buf_.size() * 8 < len) buf_.resize(std::max<uint64_t>(len, kWindowBytes) / 8);
    dma_.read(l_.req_offset + off, buf_.data(), len);
  }
  // One drain's bounds, and how far it got.
  struct Pass {
    uint32_t max;
    uint64_t fence;
  };
  struct Progress {
    uint64_t pos, taken, fenced;
    bool full;  // the next slot would take the pass past its max
  };
  // Walks the sealed, well-framed slots in buf_ from p->pos, within `limit` bytes, until
  // pass.max records; with `take`, hands each record at or past the fence to fn. Advances *p;
  // returns the bytes walked, with *stop the length found where it stopped (0: not sealed, < 0:
  // broken framing, > 0: the slot does not fit `limit`, or max was reached).
  template <class Fn>
  uint64_t walk(uint64_t limit, bool take, const Pass& pass, Fn& fn, Progress* p, int64_t* stop);
  // Hands the records of the slot at `at` (ring position `pos`, header `s` as slot_at judged it)
  // to fn as RequestViews.
  template <class Fn>
  void deliver(uint64_t at, pd3_slot s, uint64_t pos, Fn& fn);

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  uint64_t head_;
  uint64_t window_ = kMinWindowBytes;  // bytes the next pass reads first
  std::vector<uint64_t> buf_;  // ring bytes in agent memory (8-aligned)
};

template <class Fn>
void RequestReader::deliver(uint64_t at, pd3_slot s, uint64_t pos, Fn& fn) {
  const uint8_t* slot = bytes() + at;
  RequestView v{};
  v.pos = pos;
  if (s.kind == PD3_SLOT_RECORDS) {  // framing checked by slot_at: every record is whole
    v.has_header = true;
    v.status = PD3_OK;
    (void)records_at(at, s).walk([&](const uint8_t* rec, uint32_t record_len) {
      std::memcpy(&v.hdr, rec, sizeof v.hdr);
      v.payload = rec + sizeof v.hdr;
      v.record_len = record_len;
      fn(static_cast<const RequestView&>(v));
    });
    return;
  }
  v.payload = slot + sizeof(pd3_slot) + sizeof(pd3_request);
  v.has_header = s.length >= sizeof(pd3_slot) + sizeof(pd3_request);
  if (!v.has_header) {
    v.status = PD3_E_CORRUPT;
  } else {
    std::memcpy(&v.hdr, slot + sizeof(pd3_slot), sizeof v.hdr);
    const uint64_t body = sizeof(pd3_request) + uint64_t(pd3_request_payload_len(&v.hdr));
    v.status = slot_len(body) == s.length ? PD3_OK : PD3_E_CORRUPT;
    v.record_len = v.status == PD3_OK ? uint32_t(body) : 0;
  }
  if (v.status != PD3_OK) counters_.add(AgentCounters::kCorrupt);
  fn(static_cast<const RequestView&>(v));
}

inline int64_t RequestReader::slot_at(size_t at, uint64_t pos, uint64_t limit) const {
  const pd3_slot s = header_at(at);
  if (s.seal != l_.seal_of(pos)) return 0;
  bool framed = s.length >= sizeof(pd3_slot) && s.length % PD3_SLOT_ALIGN == 0 &&
                (pos & (l_.req_size - 1)) + s.length <= l_.req_size &&
                (s.kind == PD3_SLOT_RECORD || s.kind == PD3_SLOT_RECORDS || s.kind == PD3_SLOT_PAD);
  if (framed && s.kind == PD3_SLOT_RECORDS && at + s.length <= limit) framed = records_at(at, s).framed();
  return framed ? int64_t(s.length) : -1;
}

template <class Fn>
uint64_t RequestReader::walk(uint64_t limit, bool take, const Pass& pass, Fn& fn, Progress* p, int64_t* stop) {
  uint64_t at = 0;
  int64_t len = 0;
  while (p->taken < pass.max && at + sizeof(pd3_slot) <= limit) {
    len = slot_at(at, p->pos, limit);
    if (len <= 0 || at + uint64_t(len) > limit) break;
    const pd3_slot s = header_at(at);
    const uint64_t records = s.kind == PD3_SLOT_RECORDS ? s.count : s.kind == PD3_SLOT_RECORD ? 1 : 0;
    if (p->taken > 0 && records > pass.max - p->taken) {
      p->full = true;
      break;
    }
    if (records > 0) {
      p->taken += records;
      if (p->pos < pass.fence) p->fenced += records;
      else if (take) deliver(at, s, p->pos, fn);
    }
    p->pos += uint64_t(len);
    at += uint64_t(len);
  }
  *stop = len;
  return at;
}

template <class Fn>
int RequestReader::drain(uint32_t max, uint64_t fence, Fn&& fn) {
  // The seal at head first: an empty ring costs this one read, and the producers' req_tail line
  // (which they CAS on every request) is never pulled away from them.
  if (!published_at_head()) return 0;
  const Pass pass{max, fence};
  Progress done{head_, 0, 0, false};
  int rc = 0;
  uint64_t window = window_;
  while (done.taken < max && !done.full && rc == 0 && done.pos - head_ < l_.req_size) {
    const uint64_t off = done.pos & (l_.req_size - 1);
    const uint64_t want = std::min(window, l_.req_size - off);  // never past the ring's end
    read_window(off, want);
    int64_t stop;  // 0: the next slot is not sealed; < 0: its framing is broken; > 0: window or max
    uint64_t end;
    uint64_t fresh = want;  // bytes of buf_ read after the seals they are judged by
    if (dma_.ordered_reads()) {
      end = walk(want, /*take=*/true, pass, fn, &done, &stop);
    } else {
      // A DMA engine gives no order inside a read: the body of a slot whose seal it saw may be
      // older than the seal. So find the sealed run first, then read it again (with the slot that
      // ended it, to judge that one again: its header, and its body too when it looked broken and
      // fits the window, since a batch slot's records are part of its framing), issued after the
      // first read completed: that copy holds every slot the first saw sealed, whole.
      Progress scan = done;
      end = walk(want, /*take=*/false, pass, fn, &scan, &stop);
      fresh = std::min(want, end + sizeof(pd3_slot));
      if (stop < 0 && end + sizeof(pd3_slot) <= want) fresh = std::max(fresh, std::min<uint64_t>(want, end + header_at(end).length));
      if (end > 0 || stop < 0) read_window(off, fresh);
      int64_t again;
      if (walk(end, /*take=*/true, pass, fn, &done, &again) < end) break;  // the copies disagree
      done.full = scan.full;  // both walks ended at the same slot
    }
    if (end == 0 && stop > 0 && uint64_t(stop) > want) {  // one slot larger than the window
      window = uint64_t(stop);
      continue;
    }
    if (stop < 0 && slot_at(end, done.pos, fresh) < 0) rc = PD3_E_CORRUPT;
    if (stop <= 0) break;  // broken (or sealed since the first copy: the next pass), or not sealed
    window = std::min(2 * window, uint64_t{kWindowBytes});  // the batch goes on: read more at once
  }
  uint64_t pos = done.pos;
  const uint64_t taken = done.taken, fenced = done.fenced;
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
