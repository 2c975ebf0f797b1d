// mlock_pinner.cpp — mlock/munlock with a process-wide per-page pin count.
#include "mrrc/mlock_pinner.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pd3::mrrc {
namespace {

// The process's pinned pages: page address -> how many registrations hold it.
struct PinTable {
  std::mutex mu;
  std::unordered_map<uintptr_t, uint32_t> counts;  // guarded by mu
};

PinTable& table() {
  static PinTable t;
  return t;
}

size_t system_page() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

// Calls `fn(addr, len)` for each maximal run of adjacent pages in the sorted `pages`.
template <class Fn>
void for_each_run(const std::vector<uintptr_t>& pages, size_t page, Fn&& fn) {
  size_t i = 0;
  while (i < pages.size()) {
    size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + page) ++j;
    fn(pages[i], (j - i) * page);
    i = j;
  }
}

}  // namespace

size_t MlockPinner::page_size() const { return system_page(); }

size_t MlockPinner::pin_limit() const {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return size_t(lim.rlim_cur);
}

size_t MlockPinner::pinned_pages() {
  PinTable& t = table();
  std::lock_guard lock(t.mu);
  return t.counts.size();
}

Result MlockPinner::pin(PageRange range) {
  const size_t page = system_page();
  assert(range.len > 0 && range.addr % page == 0 && range.len % page == 0);
  PinTable& t = table();
  std::lock_guard lock(t.mu);
  std::vector<uintptr_t> fresh;  // pages nobody holds yet: these need an mlock
  for (uintptr_t p = range.addr; p < range.end(); p += page)
    if (t.counts.find(p) == t.counts.end()) fresh.push_back(p);
  std::vector<PageRange> locked;
  int err = 0;
  for_each_run(fresh, page, [&](uintptr_t addr, size_t len) {
    if (err != 0) return;
    if (mlock(reinterpret_cast<void*>(addr), len) != 0) {
      err = errno;
      return;
    }
    locked.push_back({addr, len});
  });
  if (err != 0) {
    for (const PageRange& r : locked) (void)munlock(reinterpret_cast<void*>(r.addr), r.len);  // undo: best effort
    return {Status::kPinFailed, err};
  }
  for (uintptr_t p = range.addr; p < range.end(); p += page) ++t.counts[p];
  return {};
}

Result MlockPinner::unpin(std::span<const PageRange> batch) {
  const size_t page = system_page();
  PinTable& t = table();
  std::lock_guard lock(t.mu);
  std::vector<uintptr_t> released;  // pages whose last holder this was
  for (const PageRange& r : batch) {
    assert(r.len > 0 && r.addr % page == 0 && r.len % page == 0);
    for (uintptr_t p = r.addr; p < r.end(); p += page) {
      auto it = t.counts.find(p);
      assert(it != t.counts.end() && "unpin of a page that is not pinned");
      if (it == t.counts.end()) continue;
      if (--it->second == 0) {
        t.counts.erase(it);
        released.push_back(p);
      }
    }
  }
  std::sort(released.begin(), released.end());
  int err = 0;
  for_each_run(released, page, [&](uintptr_t addr, size_t len) {
    if (munlock(reinterpret_cast<void*>(addr), len) != 0 && err == 0) err = errno;
  });
  if (err != 0) return {Status::kUnpinFailed, err};
  return {};
}

}  // namespace pd3::mrrc
