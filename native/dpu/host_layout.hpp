// host_layout.hpp — where things are in the host's segment, as offsets for HostDma: the sections
// (read once from the control block at attach) and the control block's fields.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dpu/host_dma.hpp"
#include "pd3/segment.h"
#include "pd3/wire.h"

// Segment offset of a control-block field.
#define PD3_CTL(field) uint64_t(offsetof(pd3_control, field))

namespace pd3 {

// The segment's sections: a copy of the control block's identity lines (they never change).
struct HostLayout {
  uint64_t req_offset = 0, req_size = 0;
  uint64_t resp_offset = 0, resp_size = 0;
  uint64_t lz_desc_offset = 0, lz_bucket_offset = 0, lz_data_offset = 0, lz_data_size = 0;
  uint64_t lz_desc_count = 0, lz_bucket_count = 0;
  uint64_t seal_salt = 0;

  // One DMA read of the identity lines (the segment was validated when it was attached).
  static HostLayout read(HostDma& dma) {
    pd3_control id{};
    dma.read(0, &id, 2 * PD3_CACHE_LINE);
    HostLayout l;
    l.req_offset = id.req_offset;
    l.req_size = id.req_size;
    l.resp_offset = id.resp_offset;
    l.resp_size = id.resp_size;
    l.lz_desc_offset = id.lz_desc_offset;
    l.lz_bucket_offset = id.lz_bucket_offset;
    l.lz_data_offset = id.lz_data_offset;
    l.lz_data_size = id.lz_data_size;
    l.lz_desc_count = id.lz_desc_count;
    l.lz_bucket_count = id.lz_bucket_count;
    l.seal_salt = id.seal_salt;
    return l;
  }

  // The seal a slot at monotonic position `pos` carries once published (pd3_slot).
  uint64_t seal_of(uint64_t pos) const { return (pos ^ seal_salt) | 1u; }
  uint64_t desc_at(uint64_t seq) const { return lz_desc_offset + (seq & (lz_desc_count - 1)) * sizeof(pd3_lz_desc); }
  uint64_t bucket_at(uint64_t index) const { return lz_bucket_offset + index * 8; }
  uint64_t lz_data_at(uint64_t pos) const { return lz_data_offset + (pos & (lz_data_size - 1)); }
};

// The agent's statistics in the control block (lines 9 and 11), kept here and written to the host
// as one posted write per line when they changed (flush), instead of a DMA per increment.
struct AgentCounters {
  uint64_t line9[8] = {};  // agent_batches .. lz_invalidated, in pd3_control order
  uint64_t fenced = 0;     // agent_fenced
  bool dirty9 = false, dirty_fenced = false;

  enum Index { kBatches, kRequests, kCorrupt, kResponses, kLzProduced, kLzConsumed, kLzReclaimedUnconsumed, kLzInvalidated };

  AgentCounters() = default;
  explicit AgentCounters(HostDma& dma) { load(dma); }

  void add(Index i, uint64_t n = 1) {
    line9[i] += n;
    dirty9 = true;
  }
  void add_fenced(uint64_t n) {
    fenced += n;
    dirty_fenced = true;
  }
  uint64_t get(Index i) const { return line9[i]; }
  // Reads the host's values (a restarted agent continues them).
  void load(HostDma& dma) {
    dma.read(PD3_CTL(agent_batches), line9, sizeof line9);
    fenced = dma.read64(PD3_CTL(agent_fenced));
  }
  // Posted writes of what changed; statistics, so no fence.
  void flush(HostDma& dma) {
    if (dirty9) dma.write(PD3_CTL(agent_batches), line9, sizeof line9);
    if (dirty_fenced) dma.write64(PD3_CTL(agent_fenced), fenced);
    dirty9 = dirty_fenced = false;
  }
};
static_assert(PD3_CTL(lz_invalidated) - PD3_CTL(agent_batches) == 7 * 8, "line 9 is eight counters");

}  // namespace pd3
