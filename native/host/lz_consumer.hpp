// lz_consumer.hpp — checkAndReturn: the host's lock-free, non-blocking Loading Zone lookup (§7).
#pragma once

#include <cstdint>

#include "common/lz_view.hpp"

namespace pd3 {

// Looks up `key` in the zone; on a PRODUCED match copies its data into `dest`, takes it with one
// CAS and returns its size. Returns 0 on a miss and PD3_E_DEST_SMALL if the match is larger than
// `dest_cap` (left unconsumed). Consumers never write Head or any cursor: the only shared write is
// the CAS on the matching item's state word (paper Fig. 7b), and the index makes the cost
// independent of how many items are pending. Safe from any thread of any process that maps the zone.
int64_t lz_check_and_return(const LzView& zone, const void* key, uint32_t key_len, void* dest, uint32_t dest_cap);

}  // namespace pd3
