// region_table.cpp — see region_table.hpp.
#include "memserver/region_table.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "common/error.hpp"
#include "common/tenant_credential.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {
constexpr const char* kFilePrefix = "region-";
constexpr const char* kFileSuffix = ".pd3";
constexpr const char* kSealedSuffix = ".sealed";  // marker of a sealed region: "<region file>.sealed"
}  // namespace

std::string RegionTable::file_name(uint32_t local, const std::string& tenant) {
  // '@' is outside the tenant alphabet, so the name splits back unambiguously.
  return kFilePrefix + std::to_string(local) + (tenant.empty() ? "" : "@" + tenant) + kFileSuffix;
}

uint32_t RegionTable::parse_file_name(const std::string& name, std::string* tenant) {
  const std::string prefix = kFilePrefix, suffix = kFileSuffix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return 0;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  std::string owner;
  if (const size_t at = digits.find('@'); at != std::string::npos) {
    owner = digits.substr(at + 1);
    digits.resize(at);
    if (owner.empty() || !valid_tenant_name(owner)) return 0;
  }
  if (digits.size() > 5) return 0;  // 65535, the largest local id, has 5 digits
  uint32_t local = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
    local = local * 10 + uint32_t(c - '0');
  }
  // Only the canonical spelling counts ("region-07.pd3" is not region 7's file).
  if (local == 0 || local > PD3_REGION_LOCAL_MAX || file_name(local, owner) != name) return 0;
  *tenant = std::move(owner);
  return local;
}

int RegionTable::load() {
  if (dir_ == nullptr) return PD3_OK;
  std::vector<std::string> names;
  if (int rc = dir_->list(&names); rc != PD3_OK) return rc;
  // In increasing local id, so add() sees the ids between two files as free ones.
  struct RegionFile {
    uint32_t local;
    std::string name, tenant;
    bool operator<(const RegionFile& o) const { return local < o.local; }
  };
  std::vector<RegionFile> files;
  for (const std::string& name : names) {
    std::string tenant;
    if (const uint32_t local = parse_file_name(name, &tenant); local != 0) files.push_back({local, name, tenant});
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 1; i < files.size(); ++i)
    if (files[i].local == files[i - 1].local)
      return fail(PD3_E_CORRUPT, "data_dir %s holds two files of region %u (%s and %s)", dir_->path().c_str(),
                  unsigned(files[i].local), files[i - 1].name.c_str(), files[i].name.c_str());
  for (auto& [local, name, tenant] : files) {
    auto region = std::make_unique<Region>();
    uint64_t size = 0;
    if (tiered_) {
      if (int rc = dir_->open_file(name, &region->file, &size); rc != PD3_OK) return rc;
    } else if (int rc = dir_->map(name, kMaxCapacity, &region->memory, &size); rc != PD3_OK) {
      return rc;
    }
    if ((region->memory.data() == nullptr && !tiered_) || size == 0 || size > kMaxCapacity || size % kAlign != 0)
      return fail(PD3_E_CORRUPT, "region file %s/%s has %llu bytes: a region has a multiple of %u bytes in [%u, %u]",
                  dir_->path().c_str(), name.c_str(), (unsigned long long)size, kAlign, kAlign, kMaxCapacity);
    region->id = pd3_region_id(server_id_, local);
    region->capacity = uint32_t(size);
    // A frozen region's move was given up by the restart (its seal, if the mover gets that far,
    // is refused); a sealed one stays sealed.
    if (dir_->exists(name + kSealedSuffix)) region->move = MoveState::kSealed;
    region->tenant = std::move(tenant);
    add(std::move(region));
  }
  return PD3_OK;
}

Region* RegionTable::find(uint32_t id) const {
  if (pd3_region_server(id) != server_id_) return nullptr;
  const uint32_t local = pd3_region_local(id);
  return local < regions_.size() ? regions_[local].get() : nullptr;  // local 0 is never filled
}

void RegionTable::add(std::unique_ptr<Region> region) {
  ++count_;
  allocated_ += region->capacity;
  const uint32_t local = pd3_region_local(region->id);
  // Ids skipped over (files missing between two loaded ones) become free ids.
  for (uint32_t skipped = uint32_t(regions_.size()); skipped < local; ++skipped) {
    free_locals_.push_back(skipped);
    std::push_heap(free_locals_.begin(), free_locals_.end(), std::greater<>());
  }
  if (local >= regions_.size()) regions_.resize(size_t(local) + 1);
  regions_[local] = std::move(region);
}

int RegionTable::allocate(uint32_t bytes, const std::string& tenant, Region** out) {
  assert(valid_tenant_name(tenant));  // the hello admitted only valid names
  if (bytes == 0) return fail(PD3_E_INVAL, "allocation of 0 bytes");
  const uint64_t capacity = (uint64_t(bytes) + kAlign - 1) / kAlign * kAlign;
  if (capacity > kMaxCapacity) return fail(PD3_E_INVAL, "allocation of %u bytes: a region holds at most %u", bytes, kMaxCapacity);
  if (allocated_ + capacity > capacity_)
    return fail(PD3_E_NOSPACE, "allocation of %llu bytes: %llu of %llu bytes already allocated",
                (unsigned long long)capacity, (unsigned long long)allocated_, (unsigned long long)capacity_);
  // The lowest free id: a freed one below the table's end, else the next one past it.
  const bool reuse = !free_locals_.empty();
  const uint32_t local = reuse ? free_locals_.front() : uint32_t(regions_.size());
  if (local > PD3_REGION_LOCAL_MAX) return fail(PD3_E_NOSPACE, "all %u region ids are in use", PD3_REGION_LOCAL_MAX);
  auto region = std::make_unique<Region>();
  region->id = pd3_region_id(server_id_, local);
  region->capacity = uint32_t(capacity);
  region->tenant = tenant;
  const int rc = dir_ == nullptr ? Mapping::anonymous(capacity, &region->memory)
                 : tiered_      ? dir_->create_file(file_name(local, tenant), capacity, &region->file)
                                : dir_->create(file_name(local, tenant), capacity, [](Mapping&) { return int(PD3_OK); }, &region->memory);
  if (rc != PD3_OK) return rc;
  if (reuse) {
    std::pop_heap(free_locals_.begin(), free_locals_.end(), std::greater<>());
    free_locals_.pop_back();
  }
  *out = region.get();
  add(std::move(region));
  return PD3_OK;
}

int RegionTable::deallocate(uint32_t id) {
  Region* region = find(id);
  if (region == nullptr) return fail(PD3_E_BAD_REGION, "deallocate of unknown region %#x", unsigned(id));
  const uint32_t local = pd3_region_local(id);
  if (dir_ != nullptr) {
    if (int rc = dir_->remove(file_name(local, region->tenant)); rc != PD3_OK) return rc;
    // The marker after the region: a crash in between leaves a marker without a region, ignored.
    if (region->move == MoveState::kSealed) (void)dir_->remove(file_name(local, region->tenant) + kSealedSuffix);
  }
  --count_;
  allocated_ -= region->capacity;
  regions_[local].reset();
  free_locals_.push_back(local);
  std::push_heap(free_locals_.begin(), free_locals_.end(), std::greater<>());
  return PD3_OK;
}

int RegionTable::set_move(Region* region, MoveState next) {
  const bool was_sealed = region->move == MoveState::kSealed, sealed = next == MoveState::kSealed;
  if (dir_ != nullptr && was_sealed != sealed) {
    const std::string marker = file_name(pd3_region_local(region->id), region->tenant) + kSealedSuffix;
    if (int rc = sealed ? dir_->create_marker(marker) : dir_->remove(marker); rc != PD3_OK) return rc;
  }
  region->move = next;
  return PD3_OK;
}

std::vector<uint32_t> RegionTable::regions_of(const std::string& tenant) const {
  std::vector<uint32_t> ids;
  for (const auto& region : regions_)
    if (region != nullptr && region->tenant == tenant) ids.push_back(region->id);
  return ids;
}

int RegionTable::give_back(Region* region, uint64_t* released) {
  if (int rc = region->memory.give_back(released); rc != PD3_OK) return rc;
  region->dirty_lo = UINT64_MAX;  // the msync wrote everything: clean, as after sync()
  region->dirty_hi = 0;
  if (*released != 0) region->given_back = true;
  return PD3_OK;
}

std::vector<Region*> RegionTable::coldest_first() const {
  std::vector<Region*> out;
  for (const auto& region : regions_)
    if (region != nullptr) out.push_back(region.get());
  std::sort(out.begin(), out.end(), [](const Region* a, const Region* b) { return a->last_use < b->last_use; });
  return out;
}

std::vector<TenantUsage> RegionTable::usage() const {
  std::map<std::string, TenantUsage> by_tenant;
  for (const auto& region : regions_) {
    if (region == nullptr) continue;
    TenantUsage& u = by_tenant[region->tenant];
    u.tenant = region->tenant;
    ++u.regions;
    u.bytes += region->capacity;
  }
  std::vector<TenantUsage> out;
  for (auto& [name, u] : by_tenant) out.push_back(std::move(u));
  return out;
}

void RegionTable::mark_written(Region* region, uint64_t lo, uint64_t hi) {
  if (!durable()) return;
  if (region->dirty_lo >= region->dirty_hi) {
    dirty_.push_back(pd3_region_local(region->id));
    region->dirty_lo = lo;
    region->dirty_hi = hi;
    return;
  }
  if (lo < region->dirty_lo) region->dirty_lo = lo;
  if (hi > region->dirty_hi) region->dirty_hi = hi;
}

int RegionTable::sync(uint64_t* flushes) {
  size_t done = 0;
  int rc = PD3_OK;
  for (; done < dirty_.size(); ++done) {
    Region* region = regions_[dirty_[done]].get();
    if (region == nullptr || region->dirty_lo >= region->dirty_hi) continue;  // freed, or already synced
    rc = region->memory.flush(region->dirty_lo, region->dirty_hi);
    if (rc != PD3_OK) break;
    ++*flushes;
    region->dirty_lo = UINT64_MAX;
    region->dirty_hi = 0;
  }
  dirty_.erase(dirty_.begin(), dirty_.begin() + ptrdiff_t(done));
  return rc;
}

std::vector<RegionHeat> RegionTable::heat() const {
  std::vector<RegionHeat> out;
  out.reserve(count_);
  for (const std::unique_ptr<Region>& r : regions_) {
    if (r != nullptr) out.push_back(RegionHeat{r->id, r->capacity, r->tenant, r->accesses, r->move});
  }
  return out;
}

}  // namespace pd3
