// tier_sync.cpp — the SSD tier's durability (Tier's sync members, tier.hpp): the pages written since
// the last sync go to their files with pwrite, then the files are fdatasync-ed, either at once
// (sync()) or in group-commit batches through the I/O backend (begin_sync() / sync_status()).
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "memserver/tier/tier.hpp"
#include "pd3/status.h"

namespace pd3::tier {

namespace {

int write_status(int e) { return e == ENOSPC || e == EDQUOT ? PD3_E_NOSPACE : PD3_E_SYS; }

}  // namespace

int Tier::write_listed(std::vector<std::pair<FrameId, uint64_t>>* written) {
  // A page evicted since its write was written back before its frame was reused, so the
  // fdatasync of its file covers it too.
  std::vector<std::pair<FrameId, uint64_t>> pending = std::exchange(to_sync_, {});
  int rc = PD3_OK;
  for (const auto& [f, seq] : pending) {
    Frame& fr = pool_->at(f);
    if (fr.seq != seq) continue;  // evicted: its write-back completed first
    fr.in_sync = false;
    if (!fr.dirty) continue;      // written back meanwhile
    const uint32_t len = page_len(*fr.file, fr.page);
    // A write-back in flight writes the same bytes (writers wait for it): writing them again here
    // is harmless and makes this sync independent of it.
    const ssize_t n = pwrite(fr.file->fd.get(), pool_->memory(f), len, off_t(fr.page * pool_->page_size()));
    if (n != ssize_t(len)) {
      const int e = n < 0 ? errno : EIO;
      if (rc == PD3_OK) rc = fail(write_status(e), "writing page %llu of region %#x: %s", (unsigned long long)fr.page,
                                  unsigned(fr.file->region), strerror(e));
      error("writing page %llu of region %#x to its file failed: %s", (unsigned long long)fr.page,
            unsigned(fr.file->region), strerror(e));
      fr.in_sync = true;
      to_sync_.emplace_back(f, seq);
      continue;
    }
    ++stats_.writebacks;
    pool_->set_dirty(f, false);
    written->emplace_back(f, seq);
  }
  std::sort(sync_files_.begin(), sync_files_.end());
  sync_files_.erase(std::unique(sync_files_.begin(), sync_files_.end()), sync_files_.end());
  return rc;
}

void Tier::relist(const std::vector<std::pair<FrameId, uint64_t>>& written) {
  for (const auto& [f, seq] : written) {
    Frame& fr = pool_->at(f);
    if (fr.seq != seq) continue;  // evicted since: its write-back wrote it again
    pool_->set_dirty(f, true);
    if (!fr.in_sync) {
      fr.in_sync = true;
      to_sync_.emplace_back(f, seq);
    }
  }
}

int Tier::sync() {
  if (to_sync_.empty() && sync_files_.empty()) return PD3_OK;
  std::vector<std::pair<FrameId, uint64_t>> written;
  int rc = write_listed(&written);
  bool synced = true;
  for (const std::shared_ptr<RegionFile>& file : sync_files_) {
    if (file->dropped || fdatasync(file->fd.get()) == 0) continue;
    const int e = errno;
    synced = false;
    if (rc == PD3_OK) rc = fail(write_status(e), "fdatasync of region %#x: %s", unsigned(file->region), strerror(e));
    error("fdatasync of region %#x failed: %s", unsigned(file->region), strerror(e));
  }
  if (!synced) {
    relist(written);  // not known to be on disk
    return rc;
  }
  if (to_sync_.empty()) sync_files_.clear();
  return rc;
}

int Tier::begin_sync(uint64_t* ticket) {
  *ticket = 0;
  if (to_sync_.empty() && sync_files_.empty()) return PD3_OK;
  if (int rc = write_listed(&sync_waiting_.written); rc != PD3_OK) return rc;
  for (std::shared_ptr<RegionFile>& file : sync_files_)
    if (!file->dropped) sync_waiting_.files.push_back(std::move(file));
  sync_files_.clear();
  if (sync_waiting_.files.empty()) return PD3_OK;
  *ticket = sync_next_;
  if (sync_outstanding_ == 0) submit_sync_batch();
  return PD3_OK;
}

void Tier::submit_sync_batch() {
  assert(sync_outstanding_ == 0);
  sync_running_ = std::exchange(sync_waiting_, {});
  auto& files = sync_running_.files;
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  sync_failure_ = PD3_OK;
  const uint64_t ticket = sync_next_++;
  for (uint32_t i = 0; i < files.size(); ++i) {
    IoOp op;
    op.kind = IoOp::Kind::kSync;
    op.fd = files[i]->fd.get();
    op.tag = kSyncTag | ticket;
    if (io_->submit(op) != PD3_OK) {
      sync_failure_ = PD3_E_NOMEM;
      continue;
    }
    ++sync_outstanding_;
  }
  if (sync_outstanding_ == 0) {  // nothing could be submitted: the batch ends at once
    ++sync_outstanding_;
    on_sync_done(0);
  }
}

void Tier::on_sync_done(int64_t result) {
  if (result < 0 && sync_failure_ == PD3_OK) {
    sync_failure_ = write_status(int(-result));
    error("fdatasync of a region file failed: %s", strerror(int(-result)));
  }
  if (--sync_outstanding_ > 0) return;
  const uint64_t ticket = sync_next_ - 1;
  if (sync_failure_ != PD3_OK) {
    relist(sync_running_.written);
    for (std::shared_ptr<RegionFile>& file : sync_running_.files) sync_files_.push_back(std::move(file));
    sync_failed_.emplace_back(ticket, sync_failure_);
    if (sync_failed_.size() > 64) sync_failed_.erase(sync_failed_.begin());  // their frames were told long ago
  }
  sync_running_ = {};
  sync_done_ = ticket;
  if (!sync_waiting_.files.empty()) submit_sync_batch();
}

int Tier::sync_status(uint64_t ticket) {
  if (ticket > sync_done_) return kWait;
  for (const auto& [t, status] : sync_failed_)
    if (t == ticket) return fail(status, "fdatasync of the frame's files failed (see tier.io_error)");
  return kReady;
}

}  // namespace pd3::tier
