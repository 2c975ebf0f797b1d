// response_writer.hpp — agent side of the response ring over HostDma (paper §6.1 step ④):
// responses are staged in agent memory, packed into PD3_SLOT_RECORDS slots (one header per batch,
// not per response: fewer bytes for the host to pull across), and written as one batch: the
// slots' bytes with the first seal withheld, a fence, then that seal, which publishes them all.
#pragma once

#include <cstdint>
#include <vector>

#include "dpu/host_layout.hpp"

namespace pd3 {

// The single producer of the response ring. Single-threaded (the engine's).
class ResponseWriter {
 public:
  // Reads the cursors it resumes from (two reads).
  ResponseWriter(HostDma& dma, const HostLayout& layout, AgentCounters& counters);

  // Attach-time recovery: a previous agent killed between reserving slots and sealing them left
  // a hole the host would wait at forever; covers it with PAD slots (published at once).
  void repair();

  // Stages one response. `status` is PD3_OK or a negative pd3_status; `data` (READ data or a
  // CONTROL reply) is only sent with PD3_OK. Returns PD3_OK, PD3_E_AGAIN (the ring is full even
  // after re-reading the host's head: nothing staged; flush and retry later) or PD3_E_TOO_BIG
  // (could never fit).
  [[nodiscard]] int add(uint16_t op_id, int status, const void* data, uint32_t size);
  // Publishes every staged response. DMA: a write of resp_tail, one write of the slots (two when
  // the batch wraps), a fence, the first slot's seal, the counters; then the host's completion
  // doorbell (a fence and a read; a read, a CAS and a wake when a host thread waits for these
  // responses). Returns the number published.
  uint32_t flush();
  bool staged() const { return staged_bytes_ > 0; }

 private:
  [[nodiscard]] bool room_for(uint64_t bytes);
  // Wakes the host threads waiting in pd3_host_wait if the responses they wait for are published.
  void wake_host();
  // Makes stage_ hold `end` bytes and zeroes the padding of a slot that ends there.
  void stage_through(uint64_t end);
  // Stages a slot of `len` bytes (its header; the caller writes the body) and returns its offset
  // in stage_.
  uint64_t stage_slot(uint64_t len, uint16_t kind, uint16_t count);
  // Grows the open batch slot (the last staged one) by `span` bytes of record; false if it cannot
  // (none open, full, or it would cross the ring's end or the room the host has freed).
  [[nodiscard]] bool extend_open_slot(uint64_t span, uint64_t* record_at);
  // Writes the open batch slot's length and count into its staged header, and closes it.
  void close_open_slot();
  uint8_t* staged_at(uint64_t offset) { return reinterpret_cast<uint8_t*>(stage_.data()) + offset; }

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  uint64_t tail_;       // next free position (ours; written to resp_tail at flush)
  uint64_t head_seen_;  // the host's head, as last read (re-read only when the ring looks full)
  uint64_t batch_pos_ = 0;       // position of the first staged slot
  uint32_t staged_ = 0;          // records staged
  uint64_t staged_bytes_ = 0;    // bytes staged (PAD slots included)
  std::vector<uint64_t> stage_;  // the staged slots' bytes, from batch_pos_ (8-aligned; kept)
  static constexpr uint64_t kNoOpenSlot = ~uint64_t{0};
  uint64_t open_slot_ = kNoOpenSlot;  // offset in stage_ of the batch slot responses are added to
  uint64_t open_spans_ = 0;           // bytes of records in it (its length: slot_len(open_spans_))
  uint32_t open_count_ = 0;           // records in it (length and count reach its header at close)
};

}  // namespace pd3
