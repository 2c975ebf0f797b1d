// pinner.hpp — the register/deregister pair MRRC drives: the interface a backend implements
// (mlock here, ibv_reg_mr/ibv_dereg_mr on RDMA hardware) and the page range it works on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mrrc/status.hpp"

namespace pd3::mrrc {

// A page-aligned byte range [addr, addr + len), len > 0.
struct PageRange {
  uintptr_t addr = 0;
  size_t len = 0;
  uintptr_t end() const { return addr + len; }
};

// What registering memory means for one backend. Implementations must be thread-safe (several
// caches, one per host handle, may share one backend); a cache calls them under its own lock.
class Pinner {
 public:
  virtual ~Pinner() = default;

  // Registers (pins) one range. kOk, or kPinFailed with the errno (nothing stays pinned then).
  virtual Result pin(PageRange range) = 0;

  // Deregisters (unpins) every range of `batch` as one batched operation. The ranges are distinct
  // and were each pinned by pin(). kOk or kUnpinFailed with the first errno; every range counts as
  // unpinned afterwards either way.
  virtual Result unpin(std::span<const PageRange> batch) = 0;

  // The granule ranges must be aligned to (a power of two).
  virtual size_t page_size() const = 0;

  // Most bytes this backend can keep pinned (SIZE_MAX when unbounded); a cache caps its capacity to it.
  virtual size_t pin_limit() const = 0;
};

}  // namespace pd3::mrrc
