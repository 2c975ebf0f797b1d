// key_directory.cpp — the direct-mapped key → server table of the prefetcher.
#include "dpu/key_directory.hpp"

#include <new>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

constexpr uint32_t kServerBits = 5;
constexpr uint32_t kServerMask = (1u << kServerBits) - 1;

}  // namespace

KeyDirectory::KeyDirectory(uint64_t slots) : slots_(new uint32_t[slots]()), mask_(slots - 1) {}

int KeyDirectory::create(uint64_t slots, std::unique_ptr<KeyDirectory>* out) {
  if (slots == 0 || slots > kMaxSlots)
    return fail(PD3_E_INVAL, "directory of %llu keys: 1 to %llu are supported", (unsigned long long)slots,
                (unsigned long long)kMaxSlots);
  uint64_t n = 1;
  while (n < slots) n <<= 1;
  try {
    out->reset(new KeyDirectory(n));
  } catch (const std::bad_alloc&) {
    return fail(PD3_E_NOMEM, "directory of %llu slots (%llu bytes)", (unsigned long long)n,
                (unsigned long long)(n * sizeof(uint32_t)));
  }
  return PD3_OK;
}

void KeyDirectory::learn(uint64_t key_hash, int server_id) {
  if (server_id < 0 || uint32_t(server_id) >= kMaxServers) return;
  uint32_t& slot = slots_[key_hash & mask_];
  used_ += slot == 0;
  slot = tag_of(key_hash) << kServerBits | uint32_t(server_id + 1);
}

int KeyDirectory::server_of(uint64_t key_hash) const {
  const uint32_t slot = slots_[key_hash & mask_];
  if (slot == 0 || slot >> kServerBits != tag_of(key_hash)) return kUnknown;
  return int(slot & kServerMask) - 1;
}

}  // namespace pd3
