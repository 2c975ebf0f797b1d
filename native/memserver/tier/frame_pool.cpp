// frame_pool.cpp — see frame_pool.hpp.
#include "memserver/tier/frame_pool.hpp"

#include <algorithm>

#include "pd3/status.h"

namespace pd3::tier {

int FramePool::create(uint32_t frames, uint32_t page_size, std::unique_ptr<FramePool>* out) {
  assert(frames > 0 && page_size > 0);
  Mapping memory;
  if (int rc = Mapping::anonymous(uint64_t(frames) * page_size, &memory); rc != PD3_OK) return rc;
  out->reset(new FramePool(std::move(memory), frames, page_size));
  return PD3_OK;
}

FramePool::FramePool(Mapping memory, uint32_t frames, uint32_t page_size)
    : memory_(std::move(memory)), page_size_(page_size), frames_(frames) {
  free_.reserve(frames);
  for (FrameId f = frames; f > 0; --f) free_.push_back(f - 1);  // frame 0 is taken first
}

FrameId FramePool::take_free() {
  if (free_.empty()) return kNoFrame;
  const FrameId f = free_.back();
  free_.pop_back();
  return f;
}

void FramePool::assign(FrameId f, const std::shared_ptr<RegionFile>& file, uint64_t page, bool prefetched) {
  Frame& fr = frames_[f];
  assert(fr.state == Frame::State::kFree && fr.pins == 0 && !fr.dirty);
  fr.state = Frame::State::kLoading;
  fr.file = file;
  fr.page = page;
  fr.prefetched = prefetched;
  fr.retry_ns = 0;
  fr.pending_batch = 0;  // Tier::recall_pending sets it for a page evicted before it was durable
  file->pages[page] = f;
}

void FramePool::claim(FrameId f, const std::shared_ptr<RegionFile>& file, uint64_t page, uint64_t filler) {
  assign(f, file, page, false);
  Frame& fr = frames_[f];
  fr.state = Frame::State::kFilling;
  fr.filler = filler;
}

void FramePool::fill(FrameId f) {
  Frame& fr = frames_[f];
  assert(fr.state == Frame::State::kLoading || fr.state == Frame::State::kFilling);
  fr.state = Frame::State::kResident;
  ++resident_;
  if (observer.filled) observer.filled(f, memory(f), page_size_);
}

void FramePool::empty(FrameId f) {
  Frame& fr = frames_[f];
  assert(fr.state != Frame::State::kFree);
  if (fr.state == Frame::State::kResident || fr.state == Frame::State::kWriting) {
    --resident_;
    if (observer.emptied) observer.emptied(f, memory(f), page_size_);
  }
  if (!fr.file->dropped) fr.file->pages[fr.page] = kNoFrame;
  if (fr.dirty) {  // the page is gone, not written: no `cleaned`
    fr.dirty = false;
    --dirty_;
  }
  fr.state = Frame::State::kFree;
  fr.prefetched = false;
  fr.in_sync = false;
  fr.flush_ticket = 0;
  fr.pins = 0;
  fr.retry_ns = 0;
  fr.filler = 0;
  fr.file.reset();
  ++fr.seq;
  free_.push_back(f);
}

void FramePool::set_dirty(FrameId f, bool dirty) {
  if (dirty) {
    mark_dirty(f, 0, page_size_);
    return;
  }
  Frame& fr = frames_[f];
  fr.dirty_lo = fr.dirty_hi = 0;
  if (!fr.dirty) return;
  fr.dirty = false;
  --dirty_;
  const bool filled = fr.state == Frame::State::kResident || fr.state == Frame::State::kWriting;
  if (filled && cleaned) cleaned(f);
}

void FramePool::mark_dirty(FrameId f, uint32_t lo, uint32_t hi) {
  assert(lo < hi && hi <= page_size_);
  Frame& fr = frames_[f];
  if (!fr.dirty) {
    fr.dirty = true;
    ++dirty_;
    fr.dirty_lo = lo;
    fr.dirty_hi = hi;
    return;
  }
  fr.dirty_lo = std::min(fr.dirty_lo, lo);
  fr.dirty_hi = std::max(fr.dirty_hi, hi);
}

}  // namespace pd3::tier
