// store_reclaim.cpp — what the store gives back: resident memory of mapped regions under memory
// pressure, and every region of a tenant that is gone (Store, store.hpp).
#include <algorithm>

#include "memserver/capacity.hpp"
#include "memserver/store.hpp"
#include "pd3/status.h"

namespace pd3 {

int Store::relieve_pressure(PressureResult* result) {
  *result = {};
  // The tier bounds its DRAM itself: its regions have no mapping to give back.
  if (dir_ == nullptr || !options_.give_back || tier_) return PD3_OK;
  if (!read_meminfo(options_.meminfo_path.c_str(), &result->total_bytes, &result->available_bytes)) return PD3_OK;
  const uint64_t floor = uint64_t(double(result->total_bytes) * options_.headroom);
  if (result->available_bytes >= floor) return PD3_OK;
  ++stats_.pressure_events;
  result->wanted_bytes = floor - result->available_bytes;
  for (Region* region : regions_.coldest_first()) {
    if (result->released_bytes >= result->wanted_bytes) break;
    uint64_t released = 0;
    if (int rc = regions_.give_back(region, &released); rc != PD3_OK) return rc;
    if (released == 0) continue;  // nothing of it was in memory
    result->released_bytes += released;
    ++result->regions;
    ++stats_.given_back_regions;
    stats_.given_back_bytes += released;
  }
  return PD3_OK;
}

int Store::reclaim_tenant(const std::string& tenant, ReclaimResult* freed) {
  const std::vector<uint32_t> ids = regions_.regions_of(tenant);
  if (ids.empty()) return PD3_OK;
  int rc = PD3_OK;
  std::vector<uint32_t> gone;
  for (const uint32_t id : ids) {
    const uint32_t bytes = regions_.find(id)->capacity;
    if (rc = regions_.deallocate(id); rc != PD3_OK) break;
    forget_region(id);
    gone.push_back(id);
    ++freed->regions;
    freed->bytes += bytes;
    ++stats_.reclaimed_regions;
    stats_.reclaimed_bytes += bytes;
  }
  // Entries into freed regions would only miss at a prefetch, but they hold index slots until the
  // next rebuild, and a dead tenant's may be many: drop them now.
  if (!gone.empty()) {
    ++stats_.tenants_reclaimed;
    freed->index_entries += index_->erase_if([&](uint64_t address) {
      const uint32_t region = address_region(address);
      return std::binary_search(gone.begin(), gone.end(), region);  // regions_of lists them in id order
    });
  }
  return rc;
}

}  // namespace pd3
