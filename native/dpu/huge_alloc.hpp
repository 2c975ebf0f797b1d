// huge_alloc.hpp — zeroed anonymous memory on huge pages when the OS grants them: explicit
// MAP_HUGETLB pages first, then transparent huge pages (madvise), then normal pages. Never fails
// for lack of huge pages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pd3 {

// What backs a HugeMemory.
enum class PageKind { kNone, kHugeTlb, kTransparent, kNormal };

// "hugetlb", "thp", "4k", "none".
const char* page_kind_name(PageKind kind);

// An owned anonymous mapping (RAII, move-only).
class HugeMemory {
 public:
  HugeMemory() = default;
  // Maps `bytes` (rounded up to 2 MiB). With want_huge: MAP_HUGETLB, else MADV_HUGEPAGE, else 4K.
  // Returns an empty HugeMemory (data() == nullptr) if even normal pages cannot be mapped.
  static HugeMemory map(size_t bytes, bool want_huge);
  HugeMemory(HugeMemory&& o) noexcept;
  HugeMemory& operator=(HugeMemory&& o) noexcept;
  HugeMemory(const HugeMemory&) = delete;
  HugeMemory& operator=(const HugeMemory&) = delete;
  ~HugeMemory();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  PageKind kind() const { return kind_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  PageKind kind_ = PageKind::kNone;
};

}  // namespace pd3
