// huge_alloc.cpp — anonymous mappings with a huge-page preference and graceful fallback.
#include "dpu/huge_alloc.hpp"

#include <sys/mman.h>

#include <utility>

namespace pd3 {

namespace {
constexpr size_t kHuge = size_t(2) << 20;
}

const char* page_kind_name(PageKind kind) {
  switch (kind) {
    case PageKind::kHugeTlb: return "hugetlb";
    case PageKind::kTransparent: return "thp";
    case PageKind::kNormal: return "4k";
    default: return "none";
  }
}

HugeMemory HugeMemory::map(size_t bytes, bool want_huge) {
  HugeMemory m;
  m.bytes_ = (bytes + kHuge - 1) & ~(kHuge - 1);
  const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (want_huge) {
    void* p = mmap(nullptr, m.bytes_, prot, flags | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      m.data_ = p, m.kind_ = PageKind::kHugeTlb;
      return m;
    }
  }
  void* p = mmap(nullptr, m.bytes_, prot, flags, -1, 0);
  if (p == MAP_FAILED) return HugeMemory{};
  m.data_ = p;
  // THP is only a request: the kernel may still use 4K pages ("madvise" mode grants it here).
  m.kind_ = want_huge && madvise(p, m.bytes_, MADV_HUGEPAGE) == 0 ? PageKind::kTransparent : PageKind::kNormal;
  return m;
}

HugeMemory::HugeMemory(HugeMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), kind_(std::exchange(o.kind_, PageKind::kNone)) {}

HugeMemory& HugeMemory::operator=(HugeMemory&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, bytes_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    kind_ = std::exchange(o.kind_, PageKind::kNone);
  }
  return *this;
}

HugeMemory::~HugeMemory() {
  if (data_) munmap(data_, bytes_);
}

}  // namespace pd3
