// mlock_pinner.hpp — the real backend on this machine: pins pages with mlock(2), unpins them with
// munlock(2). This is the pinning half of ibv_reg_mr; on RDMA hardware the NIC's translation-table
// update comes on top (docs/mrrc.md).
#pragma once

#include <cstddef>
#include <span>

#include "mrrc/pinner.hpp"

namespace pd3::mrrc {

// Pins through mlock with a process-wide per-page pin count, because mlock does not nest: the
// kernel keeps one "locked" bit per page, so two caches (two host handles) registering the same
// buffer must not unlock each other's pages. A page is mlocked when its count goes 0 -> 1 and
// munlocked when it goes 1 -> 0, as the kernel's own pin counts do for ibv_reg_mr.
// Thread-safe: every instance shares one table under one mutex.
class MlockPinner final : public Pinner {
 public:
  // kOk, or kPinFailed with mlock's errno: ENOMEM/EAGAIN past RLIMIT_MEMLOCK (or when the range is
  // not mapped), EPERM when locking is not allowed. Nothing of the range stays pinned on failure.
  Result pin(PageRange range) override;
  // Pages whose count drops to zero are munlocked, adjacent ones in one call. kOk or kUnpinFailed.
  Result unpin(std::span<const PageRange> batch) override;
  size_t page_size() const override;
  // The soft RLIMIT_MEMLOCK (SIZE_MAX when unlimited). A process with CAP_IPC_LOCK (root) may pin
  // beyond it, but the cache is capped to it all the same, so it behaves alike for every user.
  size_t pin_limit() const override;

  // Pages this process holds pinned through any MlockPinner (for tests and metrics).
  static size_t pinned_pages();
};

}  // namespace pd3::mrrc
