// eviction_policy.hpp — the contract between the SSD tier's frame pool (which owns DRAM frames and
// the pages in them) and the policy choosing which frame to reuse (lru, fifo, random, cflru, epoch;
// docs/tier.md). The pool tells the policy what happened to each frame; the policy answers victim().
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

namespace pd3::tier {

// Index of a DRAM frame in the pool, 0 .. frames-1.
using FrameId = uint32_t;
inline constexpr FrameId kNoFrame = std::numeric_limits<FrameId>::max();

// What a policy may ask the frame pool about a frame while choosing a victim. Called only on the
// thread that calls victim().
class FrameView {
 public:
  virtual ~FrameView() = default;
  // The frame holds a page that may be evicted now: not pinned by a request in progress, not
  // being read or written back.
  virtual bool evictable(FrameId frame) const = 0;
  // The frame's page was written since it was last read from or written to the backing file.
  virtual bool dirty(FrameId frame) const = 0;
};

// The eviction policies the tier offers (--evict).
enum class EvictionKind : uint8_t { kLru, kFifo, kRandom, kCflru, kEpoch };

// Settings of the policies; each policy reads the ones it uses.
struct EvictionOptions {
  uint64_t seed = 1;                  // random: victim choice; epoch: sampling
  double cflru_window = 0.25;         // cflru: the share of the LRU end searched for a clean page
  uint32_t epoch_sample = 2048;       // epoch: frames the background sampler looks at per pass (1,024-4,096)
  double epoch_share = 0.25;          // epoch: the share of each pass's sample it queues (the oldest)
  uint32_t epoch_period_us = 1000;    // epoch: how often the global epoch advances
};

// Chooses the frame to reuse. The pool calls on_fill/on_hit/on_drop/victim from one thread (the
// tier's owner); a policy may run its own background thread (epoch) and synchronises with it itself.
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual EvictionKind kind() const = 0;
  // A page was placed in `frame` (a demand miss or a prefetch). The frame was not holding one.
  virtual void on_fill(FrameId frame) = 0;
  // An access found its page in `frame`. `write`: the access wrote it.
  virtual void on_hit(FrameId frame, bool write) = 0;
  // `frame` no longer holds a page (evicted after victim(), or its region was freed).
  virtual void on_drop(FrameId frame) = 0;
  // The page in `frame` (filled, not dropped) was dirty and is clean now: its write-back (or a
  // sync's pwrite) completed. A page becomes dirty only through on_hit(frame, true), except when a
  // failed sync marks it dirty again without a call: a policy tracking dirtiness re-checks
  // FrameView::dirty before trusting a frame it believes clean. Policies that ignore dirtiness
  // ignore this too.
  virtual void on_clean(FrameId /*frame*/) {}
  // A frame holding a page for which view.evictable() is true, the policy's choice of victim, or
  // kNoFrame when no filled frame is evictable. Does not drop it: the pool calls on_drop once the
  // page has left the frame (after a write-back if it was dirty).
  virtual FrameId victim(const FrameView& view) = 0;
};

// A policy for a pool of `frames` frames (1 or more). Never fails for a valid kind.
std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, uint32_t frames, const EvictionOptions& options);

// "lru", "fifo", "random", "cflru", "epoch"; parse_eviction_kind returns false for any other name.
const char* eviction_kind_name(EvictionKind kind);
bool parse_eviction_kind(const std::string& name, EvictionKind* out);

}  // namespace pd3::tier
