// tier_sync.cpp — the SSD tier's write-through at the end of each frame (Tier's sync members,
// tier.hpp): the bytes written since the last sync go to their files through the I/O backend (only
// each page's dirty range), then, in durable mode, the files are fdatasync-ed, in group-commit
// batches. sync() is the same, waited for.
#include <poll.h>

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

int Tier::submit_write(FrameId f) {
  Frame& fr = pool_->at(f);
  assert(fr.state == Frame::State::kResident && fr.dirty);
  const uint32_t end = std::min(fr.dirty_hi, page_len(*fr.file, fr.page));
  assert(fr.dirty_lo < end);  // copy_in never marks bytes past the region's end
  IoOp op;
  op.kind = IoOp::Kind::kWrite;
  op.fd = fr.file->fd.get();
  op.buf = pool_->memory(f) + fr.dirty_lo;
  op.len = end - fr.dirty_lo;
  op.offset = fr.page * pool_->page_size() + fr.dirty_lo;
  op.tag = f;
  if (int rc = io_->submit(op); rc != PD3_OK) return rc;
  fr.state = Frame::State::kWriting;
  ++in_flight_;
  return PD3_OK;
}

void Tier::write_listed() {
  SyncBatch& batch = sync_waiting_;
  for (const auto& [f, seq] : std::exchange(to_sync_, {})) {
    Frame& fr = pool_->at(f);
    if (fr.seq != seq) continue;  // evicted: its write-back completed before the frame was reused
    fr.in_sync = false;
    fr.pending_batch = sync_next_;  // this batch writes its bytes, or fdatasyncs what wrote them
    if (!fr.dirty) continue;  // written back meanwhile
    if (fr.state == Frame::State::kWriting) {
      // An eviction's write-back is in flight and writes these very bytes (writers wait for it):
      // the batch waits for it instead of writing them again.
      if (fr.flush_ticket == 0) {
        fr.flush_ticket = sync_next_;
        ++batch.writes;
      }
      batch.written.emplace_back(f, seq);
      continue;
    }
    if (submit_write(f) != PD3_OK) {
      if (batch.failure == PD3_OK) batch.failure = PD3_E_NOMEM;
      error("write of page %llu of region %#x not started: %s", (unsigned long long)fr.page,
            unsigned(fr.file->region), pd3_last_error());
      batch.written.emplace_back(f, seq);  // listed again when the batch fails
      continue;
    }
    fr.flush_ticket = sync_next_;
    ++batch.writes;
    batch.written.emplace_back(f, seq);
  }
  for (std::shared_ptr<RegionFile>& file : std::exchange(sync_files_, {}))
    if (!file->dropped) batch.files.push_back(std::move(file));
  resolve_listed_pending();
  for (std::shared_ptr<const UniqueFd>& file : std::exchange(sync_other_files_, {}))
    batch.other_files.push_back(std::move(file));
}

void Tier::remember_pending(const Frame& fr) {
  if (!options_.durable) return;  // written back before eviction: in the page cache, all --sync none asks
  const uint64_t key = page_key(fr.file->region, fr.page);
  if (fr.in_sync || fr.pending_batch == kListedBatch) {
    // Its file is listed: the batch the next frame end gathers fdatasyncs it.
    evicted_pending_[key] = kListedBatch;
    listed_evicted_.push_back(key);
  } else if (fr.pending_batch > sync_done_) {
    evicted_pending_[key] = fr.pending_batch;
  }
}

void Tier::recall_pending(FrameId f) {
  if (evicted_pending_.empty()) return;
  Frame& fr = pool_->at(f);
  const auto it = evicted_pending_.find(page_key(fr.file->region, fr.page));
  if (it == evicted_pending_.end()) return;
  fr.pending_batch = it->second;
  if (fr.pending_batch == kListedBatch) listed_read_back_.emplace_back(f, fr.seq);
}

void Tier::resolve_listed_pending() {
  for (const uint64_t key : std::exchange(listed_evicted_, {})) {
    const auto it = evicted_pending_.find(key);
    if (it != evicted_pending_.end() && it->second == kListedBatch) it->second = sync_next_;
  }
  for (const auto& [f, seq] : std::exchange(listed_read_back_, {})) {
    Frame& fr = pool_->at(f);
    if (fr.seq == seq && fr.pending_batch == kListedBatch) fr.pending_batch = sync_next_;
  }
}

void Tier::sync_also(std::shared_ptr<const UniqueFd> file) {
  if (options_.durable) sync_other_files_.push_back(std::move(file));
}

void Tier::relist(const std::vector<std::pair<FrameId, uint64_t>>& written) {
  for (const auto& [f, seq] : written) {
    Frame& fr = pool_->at(f);
    if (fr.seq != seq) continue;  // evicted since: its write-back wrote it again
    // Written but not known to be on disk: the whole page is written again (its dirty range is
    // forgotten once a write completes).
    if (!fr.dirty) pool_->set_dirty(f, true);
    if (!fr.in_sync) {
      fr.in_sync = true;
      to_sync_.emplace_back(f, seq);
      if (options_.durable) sync_files_.push_back(fr.file);
    }
  }
}

int Tier::sync() {
  uint64_t ticket = 0;
  if (int rc = begin_sync(Touched::everything(), &ticket); rc != PD3_OK) return rc;
  while (ticket != 0) {
    const int status = sync_status(ticket);
    if (status != kWait) return status == kReady ? PD3_OK : status;
    pollfd p{io_->completion_fd(), POLLIN, 0};
    (void)poll(&p, 1, 1000);  // a timeout only means asking again
    on_io();
  }
  return PD3_OK;
}

int Tier::begin_sync(const Touched& touched, uint64_t* ticket) {
  *ticket = 0;
  write_listed();
  uint64_t last = 0;  // the last batch there is
  if (!sync_waiting_.empty()) {
    last = sync_next_;
    if (!sync_active_) promote_batch();
  } else if (sync_active_) {
    last = sync_next_ - 1;
  }
  *ticket = touched.listed ? last : touched.batch;
  if (*ticket == 0 || *ticket > sync_done_) return PD3_OK;
  // The batch completed within this call (nothing it waited for was in flight).
  const int status = sync_status(*ticket);
  *ticket = 0;
  return status == kReady ? PD3_OK : status;
}

void Tier::promote_batch() {
  assert(!sync_active_);
  sync_running_ = std::exchange(sync_waiting_, {});
  sync_active_ = true;
  ++sync_next_;
  if (sync_running_.writes == 0) start_fdatasyncs();
}

void Tier::start_fdatasyncs() {
  const auto dedup = [](auto& files) {
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
  };
  dedup(sync_running_.files);
  dedup(sync_running_.other_files);
  if (sync_running_.failure == PD3_OK && options_.durable) {
    for (const std::shared_ptr<RegionFile>& file : sync_running_.files)
      if (!file->dropped) submit_fdatasync(file->fd.get());
    for (const std::shared_ptr<const UniqueFd>& file : sync_running_.other_files) submit_fdatasync(file->get());
  }
  if (sync_outstanding_ == 0) finish_batch();
}

void Tier::submit_fdatasync(int fd) {
  IoOp op;
  op.kind = IoOp::Kind::kSync;
  op.fd = fd;
  op.tag = kSyncTag | (sync_next_ - 1);
  if (io_->submit(op) != PD3_OK) {
    sync_running_.failure = PD3_E_NOMEM;
    return;
  }
  ++sync_outstanding_;
}

void Tier::on_flushed(uint64_t ticket, int64_t result) {
  SyncBatch* batch = ticket == sync_next_ ? &sync_waiting_ : &sync_running_;
  assert(ticket == sync_next_ || (sync_active_ && ticket == sync_next_ - 1));
  if (result < 0 && batch->failure == PD3_OK) batch->failure = write_status(int(-result));
  assert(batch->writes > 0);
  if (--batch->writes == 0 && batch == &sync_running_) start_fdatasyncs();
}

void Tier::on_sync_done(int64_t result) {
  if (result < 0) {
    if (sync_running_.failure == PD3_OK) sync_running_.failure = write_status(int(-result));
    error("fdatasync of a region or index file failed: %s", strerror(int(-result)));
  } else {
    ++stats_.fdatasyncs;
  }
  if (--sync_outstanding_ == 0) finish_batch();
}

void Tier::finish_batch() {
  const uint64_t ticket = sync_next_ - 1;
  SyncBatch done = std::exchange(sync_running_, {});
  sync_active_ = false;
  if (done.failure != PD3_OK) {
    relist(done.written);
    for (std::shared_ptr<const UniqueFd>& file : done.other_files) sync_other_files_.push_back(std::move(file));
    sync_failed_.emplace_back(ticket, done.failure);
    if (sync_failed_.size() > 64) sync_failed_.erase(sync_failed_.begin());  // their frames were told long ago
  }
  sync_done_ = ticket;
  std::erase_if(evicted_pending_, [this](const auto& e) { return e.second <= sync_done_; });
  if (!sync_waiting_.empty()) promote_batch();
}

int Tier::sync_status(uint64_t ticket) {
  if (ticket > sync_done_) return kWait;
  for (const auto& [t, status] : sync_failed_)
    if (t == ticket) return fail(status, "writing the frame's pages to their files failed (see tier.io_error)");
  return kReady;
}

}  // namespace pd3::tier
