// response_writer.hpp — agent side of the response ring over HostDma (paper §6.1 step ④):
// responses are staged in agent memory and written as one batch: the slots' bytes with the first
// seal withheld, a fence, then that seal, which publishes the whole batch.
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
  void stage_slot(uint64_t len, uint16_t kind, const void* hdr, size_t hdr_len, const void* data, size_t data_len);

  HostDma& dma_;
  const HostLayout l_;
  AgentCounters& counters_;
  uint64_t tail_;       // next free position (ours; written to resp_tail at flush)
  uint64_t head_seen_;  // the host's head, as last read (re-read only when the ring looks full)
  uint64_t batch_pos_ = 0;       // position of the first staged slot
  uint32_t staged_ = 0;          // records staged
  uint64_t staged_bytes_ = 0;    // bytes staged (PAD slots included)
  std::vector<uint64_t> stage_;  // the staged slots' bytes, from batch_pos_ (8-aligned; kept)
};

}  // namespace pd3
