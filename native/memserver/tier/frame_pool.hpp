// frame_pool.hpp — the SSD tier's DRAM: `frames` page-sized frames in one anonymous mapping, what
// each frame holds and its state, and the free list. Every page entering or leaving a frame goes
// through fill() / empty(), the one place a registration of frames (MRRC) hooks into.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/unique_fd.hpp"
#include "memserver/mapping.hpp"
#include "memserver/tier/eviction_policy.hpp"

namespace pd3::tier {

// The backing file of one region and its page table (page -> frame, kNoFrame = only on file).
// Shared with the frames whose I/O is in flight, so a region freed meanwhile keeps its descriptor
// open until the last of them completes.
struct RegionFile {
  uint32_t region = 0;
  UniqueFd fd;
  uint64_t bytes = 0;
  std::vector<FrameId> pages;
  bool dropped = false;  // the region was freed: completions only release their frames
};

// Frame::pending_batch of a page whose bytes go into the batch the next frame end gathers.
inline constexpr uint64_t kListedBatch = ~0ull;

// What one frame holds.
struct Frame {
  enum class State : uint8_t {
    kFree,      // holds nothing; on the free list
    kLoading,   // a read of its page from the file is in flight
    kResident,  // holds its page; readable and writable
    kWriting,   // holds its page; a write-back is in flight (readable; writers wait)
    kFilling,   // claimed by a write covering the whole page, which fills it: nothing was read, so
                // every other request waits; emptied if its writer gives up without writing
  };
  State state = State::kFree;
  bool dirty = false;       // written since last read from or written to the file
  bool prefetched = false;  // brought in by a prefetch and not accessed since
  bool in_sync = false;     // listed for the next frame-end write-through (Tier::begin_sync)
  uint32_t dirty_lo = 0;    // [dirty_lo, dirty_hi): the bytes of the page written since it was clean
  uint32_t dirty_hi = 0;
  uint64_t flush_ticket = 0;  // the write-through batch waiting for this frame's write in flight (0: none)
  // The last group-commit batch that writes this page's bytes to disk: until it completes, what a
  // request reads here may not be durable, and its response waits (Tier::release, Tier::begin_sync).
  // kListedBatch: the page was evicted while listed and read back; the next frame end's batch.
  uint64_t pending_batch = 0;
  uint32_t pins = 0;        // requests in progress using the page: never evicted while > 0
  uint64_t page = 0;
  uint64_t seq = 0;         // counts the pages the frame has held: a pin names (frame, seq)
  uint64_t retry_ns = 0;    // a failed write-back: not evictable before this time
  uint64_t filler = 0;      // kFilling: Pins::owner of the request whose write fills it
  std::shared_ptr<RegionFile> file;
};

// Called when a frame starts or stops holding a page (address and length of the frame's memory).
struct FrameObserver {
  std::function<void(FrameId, uint8_t*, uint32_t)> filled;
  std::function<void(FrameId, uint8_t*, uint32_t)> emptied;
};

// The frames and their bookkeeping; single-threaded (the tier's owner).
class FramePool {
 public:
  // `frames` frames of `page_size` bytes. Returns PD3_OK or PD3_E_NOMEM.
  [[nodiscard]] static int create(uint32_t frames, uint32_t page_size, std::unique_ptr<FramePool>* out);

  uint32_t frames() const { return uint32_t(frames_.size()); }
  uint32_t page_size() const { return page_size_; }
  Frame& at(FrameId f) { return frames_[f]; }
  const Frame& at(FrameId f) const { return frames_[f]; }
  uint8_t* memory(FrameId f) const { return memory_.data() + uint64_t(f) * page_size_; }

  // A free frame, or kNoFrame.
  FrameId take_free();
  // Puts `page` of `file` in free frame `f` (state kLoading, page table entry set).
  void assign(FrameId f, const std::shared_ptr<RegionFile>& file, uint64_t page, bool prefetched);
  // Puts `page` of `file` in free frame `f` for a write that covers it whole (state kFilling, no
  // read; page table entry set); `filler` names the writing request.
  void claim(FrameId f, const std::shared_ptr<RegionFile>& file, uint64_t page, uint64_t filler);
  // The page of `f` is in memory now (after its read, or its claiming write): kResident, observer told.
  void fill(FrameId f);
  // `f` no longer holds its page (evicted, a failed read, or a freed region): page table entry
  // cleared unless the region is gone, observer told if it was filled, frame back on the free list.
  void empty(FrameId f);
  // Clean: the dirty range is forgotten, and a resident page going from dirty to clean (its
  // write-back or a sync's write completed) is reported to `cleaned`. Dirty (whole page): see mark_dirty.
  void set_dirty(FrameId f, bool dirty);
  // Bytes [lo, hi) of the frame's page were written: dirty, the dirty range widened to cover them.
  void mark_dirty(FrameId f, uint32_t lo, uint32_t hi);

  uint64_t resident() const { return resident_; }
  uint64_t dirty() const { return dirty_; }
  FrameObserver observer;
  // Told when a filled frame's page becomes clean; the tier points it at its eviction policy's
  // on_clean (clean-first LRU keeps its clean frames apart).
  std::function<void(FrameId)> cleaned;

 private:
  FramePool(Mapping memory, uint32_t frames, uint32_t page_size);
  Mapping memory_;
  uint32_t page_size_;
  std::vector<Frame> frames_;
  std::vector<FrameId> free_;
  uint64_t resident_ = 0;  // frames kResident or kWriting
  uint64_t dirty_ = 0;
};

}  // namespace pd3::tier
