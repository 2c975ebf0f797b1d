// tier.cpp — see tier.hpp.
#include "memserver/tier/tier.hpp"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common/error.hpp"
#include "common/net.hpp"
#include "pd3/status.h"

namespace pd3::tier {

namespace {

constexpr uint32_t kMinPage = 4u << 10, kMaxPage = 2u << 20;
// A failed write-back is retried no sooner than this: a full or read-only disk is not hammered.
constexpr uint64_t kRetryNs = 1'000'000'000;

}  // namespace

int Tier::open(const TierOptions& options, std::unique_ptr<TierIo> io, std::unique_ptr<Tier>* out) {
  const uint32_t ps = options.page_size;
  if (ps < kMinPage || ps > kMaxPage || (ps & (ps - 1)) != 0)
    return fail(PD3_E_INVAL, "page size %u: a power of two from 4K to 2M", ps);
  if (options.dram_budget < ps)
    return fail(PD3_E_INVAL, "DRAM budget of %llu bytes is below one page (%u bytes)",
                (unsigned long long)options.dram_budget, ps);
  if (!io) return fail(PD3_E_INVAL, "the tier needs an I/O backend");
  const uint64_t frames = options.dram_budget / ps;
  if (frames >= kNoFrame) return fail(PD3_E_INVAL, "DRAM budget of %llu frames: at most %u", (unsigned long long)frames, kNoFrame - 1);
  std::unique_ptr<FramePool> pool;
  if (int rc = FramePool::create(uint32_t(frames), ps, &pool); rc != PD3_OK) return rc;
  auto eviction = make_eviction_policy(options.evict, uint32_t(frames), options.eviction);
  auto prefetch = make_prefetch_policy(options.prefetch, options.prefetching);
  out->reset(new Tier(options, std::move(io), std::move(pool), std::move(eviction), std::move(prefetch)));
  return PD3_OK;
}

Tier::Tier(const TierOptions& options, std::unique_ptr<TierIo> io, std::unique_ptr<FramePool> pool,
           std::unique_ptr<EvictionPolicy> eviction, std::unique_ptr<PrefetchPolicy> prefetch)
    : options_(options),
      io_(std::move(io)),
      pool_(std::move(pool)),
      eviction_(std::move(eviction)),
      prefetch_(std::move(prefetch)) {
  stats_.frames = pool_->frames();
  pool_->cleaned = [policy = eviction_.get()](FrameId f) { policy->on_clean(f); };
  if (options_.mr_cache > 0) {
    registrations_ = std::make_unique<FrameRegistrations>(options_.mr_cache);
    registrations_->attach(*pool_);
  }
}

Tier::~Tier() {
  io_.reset();  // waits for the I/O in flight (frames and files stay valid until it is done)
  for (FrameId f = 0; f < pool_->frames(); ++f) {
    const Frame& fr = pool_->at(f);
    if (!fr.dirty || fr.file == nullptr || fr.file->dropped) continue;
    const uint32_t end = std::min(fr.dirty_hi, page_len(*fr.file, fr.page));
    const uint32_t len = end - fr.dirty_lo;
    if (pwrite(fr.file->fd.get(), pool_->memory(f) + fr.dirty_lo, len,
               off_t(fr.page * pool_->page_size() + fr.dirty_lo)) != ssize_t(len))
      std::fprintf(stderr, "pd3 tier: writing back page %llu of region %#x at close failed: %s\n",
                   (unsigned long long)fr.page, unsigned(fr.file->region), strerror(errno));
  }
}

uint32_t Tier::page_len(const RegionFile& file, uint64_t page) const {
  const uint64_t start = page * pool_->page_size();
  return uint32_t(std::min<uint64_t>(pool_->page_size(), file.bytes - start));
}

void Tier::error(const char* fmt, ...) {
  ++stats_.io_errors;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (errors_.size() < 1000) errors_.emplace_back(line);  // the metric counts them all
}

std::vector<std::string> Tier::take_errors() { return std::exchange(errors_, {}); }

std::vector<std::string> Tier::take_notices() {
  return registrations_ ? registrations_->take_notices() : std::vector<std::string>{};
}

void Tier::add_region(uint32_t id, UniqueFd fd, uint64_t bytes) {
  auto file = std::make_shared<RegionFile>();
  file->region = id;
  file->fd = std::move(fd);
  file->bytes = bytes;
  file->pages.assign((bytes + pool_->page_size() - 1) / pool_->page_size(), kNoFrame);
  regions_[id] = std::move(file);
}

void Tier::drop_region(uint32_t id) {
  const auto it = regions_.find(id);
  if (it == regions_.end()) return;
  RegionFile& file = *it->second;
  for (const FrameId f : file.pages) {
    if (f == kNoFrame) continue;
    Frame& fr = pool_->at(f);
    fr.pins = 0;  // the pins lapse: their holders find the region gone when they ask again
    if (fr.state == Frame::State::kResident || fr.state == Frame::State::kFilling) {
      eviction_->on_drop(f);
      pool_->empty(f);
    }
    // Frames with I/O in flight are emptied by its completion (the file stays open until then).
  }
  file.dropped = true;
  prefetch_->forget(id);
  std::erase_if(failed_reads_, [id](const auto& e) { return uint32_t(e.first >> 32) == id; });
  std::erase_if(evicted_pending_, [id](const auto& e) { return uint32_t(e.first >> 32) == id; });
  regions_.erase(it);
}

RegionFile* Tier::region(uint32_t id) const {
  const auto it = regions_.find(id);
  return it == regions_.end() ? nullptr : it->second.get();
}

bool Tier::evictable(FrameId frame) const {
  const Frame& fr = pool_->at(frame);
  if (fr.state != Frame::State::kResident || fr.pins != 0) return false;
  return fr.retry_ns == 0 || now_ns() >= fr.retry_ns;
}

bool Tier::any_pinned() const {
  for (FrameId f = 0; f < pool_->frames(); ++f)
    if (pool_->at(f).pins > 0) return true;
  return false;
}

void Tier::pin(FrameId f, Pins* pins) {
  Frame& fr = pool_->at(f);
  ++fr.pins;
  pins->frames.emplace_back(f, fr.seq);
}

void Tier::unpin(Pins* pins) {
  for (const auto& [f, seq] : pins->frames) {
    Frame& fr = pool_->at(f);
    if (fr.seq == seq && fr.pins > 0) --fr.pins;
  }
  pins->frames.clear();
}

void Tier::release(Pins* pins) {
  for (const auto& [f, seq] : pins->frames) {
    const Frame& fr = pool_->at(f);
    if (fr.seq != seq) continue;
    if (fr.in_sync || fr.pending_batch == kListedBatch) pins->touched.listed = true;
    else if (fr.pending_batch > sync_done_) pins->touched.batch = std::max(pins->touched.batch, fr.pending_batch);
    if (fr.state != Frame::State::kFilling || fr.filler != pins->owner) continue;
    // Claimed and never written (the write was refused, or the request gave up waiting): the frame
    // holds no byte of its page. The requests waiting on it find the page gone and read it.
    eviction_->on_drop(f);
    pool_->empty(f);
  }
  unpin(pins);
}

bool Tier::covers(const RegionFile& file, uint64_t page, uint64_t lo, uint64_t hi) const {
  const uint64_t start = page * pool_->page_size();
  return lo <= start && hi >= start + page_len(file, page);
}

int Tier::acquire(uint32_t id, uint64_t lo, uint64_t hi, bool write, Pins* pins) {
  if (pins->owner == 0) pins->owner = ++next_owner_;
  unpin(pins);  // its claims stay: they are the same pages again (a request asks with one range)
  const auto it = regions_.find(id);
  assert(it != regions_.end() && lo < hi && hi <= it->second->bytes);  // the store checked the range
  const std::shared_ptr<RegionFile>& file = it->second;
  const uint64_t first = lo / pool_->page_size(), last = (hi - 1) / pool_->page_size();
  if (last - first + 1 > pool_->frames())
    return fail(PD3_E_TOO_BIG, "a request over %llu pages: the tier has %u frames",
                (unsigned long long)(last - first + 1), pool_->frames());
  bool wait = false;
  // Pages already in (or on their way into) frames first: pinned, they cannot be evicted to make
  // room for the others.
  for (uint64_t p = first; p <= last; ++p) {
    if (const auto failed = failed_reads_.find(page_key(id, p)); failed != failed_reads_.end()) {
      const int status = failed->second;
      failed_reads_.erase(failed);
      release(pins);
      pins->missed.clear();
      return fail(status, "reading page %llu of region %#x from its file failed", (unsigned long long)p, unsigned(id));
    }
    const FrameId f = file->pages[p];
    if (f == kNoFrame) continue;
    pin(f, pins);
    const Frame& fr = pool_->at(f);
    const Frame::State s = fr.state;
    if (s == Frame::State::kLoading || (write && s == Frame::State::kWriting) ||
        (s == Frame::State::kFilling && fr.filler != pins->owner))
      wait = true;
  }
  for (uint64_t p = first; p <= last; ++p) {
    if (file->pages[p] != kNoFrame) continue;
    const FrameId f = take_frame(false);
    if (f == kNoFrame) {
      release(pins);
      // Frames pinned by other requests come free when those run (their reads are in flight, or
      // they are parked behind them); with none pinned and nothing in flight, every frame holds a
      // page whose write-back failed, and waiting would be forever.
      if (in_flight_ == 0 && !any_pinned()) {
        pins->missed.clear();
        return fail(PD3_E_NOSPACE, "no DRAM frame can be freed: the pages in them could not be written back");
      }
      return kWait;
    }
    if (write && covers(*file, p, lo, hi)) {
      // Every byte of the page is about to be written: reading it first would be wasted I/O.
      pool_->claim(f, file, p, pins->owner);
      recall_pending(f);  // its writer fills it whole, but until then the page's durability is the file's
      eviction_->on_fill(f);  // the policy knows it from now on (not evictable while kFilling)
      ++stats_.overwrites;
      pin(f, pins);
      continue;
    }
    if (int rc = start_read(file, p, f, false); rc != PD3_OK) {
      release(pins);
      pins->missed.clear();
      return rc;
    }
    ++stats_.misses;
    pins->missed.push_back(page_key(id, p));
    pin(f, pins);
    wait = true;
  }
  if (wait) return kWait;
  // Sorted for on_accessed's lookups (pages missed on an earlier ask of this request come first).
  std::sort(pins->missed.begin(), pins->missed.end());
  on_accessed(id, *pins, write);
  pins->missed.clear();
  return kReady;
}

void Tier::on_accessed(uint32_t id, const Pins& pins, bool write) {
  const std::shared_ptr<RegionFile>& file = regions_.at(id);
  for (const auto& [f, seq] : pins.frames) {
    Frame& fr = pool_->at(f);
    const uint64_t key = page_key(id, fr.page);
    if (fr.state == Frame::State::kFilling) {
      // Claimed for this write (counted as an overwrite): nothing to learn for read-ahead, and
      // the policy heard of it at the claim.
      continue;
    }
    const bool miss = std::binary_search(pins.missed.begin(), pins.missed.end(), key);
    if (!miss) ++stats_.hits;
    eviction_->on_hit(f, write);
    PageAccess access;
    access.region = id;
    access.page = fr.page;
    access.region_pages = file->pages.size();
    access.miss = miss;
    access.prefetched = fr.prefetched;
    fr.prefetched = false;
    candidates_.clear();
    prefetch_->on_access(access, &candidates_);
    if (!candidates_.empty()) prefetch_pages(file, candidates_);
  }
}

void Tier::prefetch_pages(const std::shared_ptr<RegionFile>& file, const std::vector<uint64_t>& pages) {
  for (const uint64_t p : pages) {
    if (p >= file->pages.size() || file->pages[p] != kNoFrame) continue;
    const FrameId f = take_frame(true);
    if (f == kNoFrame) return;  // nothing may be given up for a guess
    if (start_read(file, p, f, true) != PD3_OK) return;
    ++stats_.prefetches;
  }
}

FrameId Tier::take_frame(bool for_prefetch) {
  if (const FrameId f = pool_->take_free(); f != kNoFrame) return f;
  // Each dirty victim gets its write-back started and is then not evictable, so the policy names
  // another: at most one pass over the frames.
  for (uint32_t tries = 0; tries < pool_->frames(); ++tries) {
    const FrameId v = eviction_->victim(*this);
    if (v == kNoFrame) return kNoFrame;
    const Frame& fr = pool_->at(v);
    if (for_prefetch && (fr.dirty || fr.prefetched)) return kNoFrame;
    if (fr.dirty) {
      start_writeback(v);
      continue;
    }
    evict(v);
    return pool_->take_free();
  }
  return kNoFrame;
}

void Tier::evict(FrameId f) {
  if (pool_->at(f).prefetched) ++stats_.useless_prefetches;
  ++stats_.evictions;
  remember_pending(pool_->at(f));
  eviction_->on_drop(f);
  pool_->empty(f);
}

int Tier::start_read(const std::shared_ptr<RegionFile>& file, uint64_t page, FrameId f, bool prefetch) {
  pool_->assign(f, file, page, prefetch);
  recall_pending(f);
  IoOp op;
  op.kind = IoOp::Kind::kRead;
  op.fd = file->fd.get();
  op.buf = pool_->memory(f);
  op.len = page_len(*file, page);
  op.offset = page * pool_->page_size();
  op.tag = f;
  if (int rc = io_->submit(op); rc != PD3_OK) {
    pool_->empty(f);
    return rc;
  }
  ++in_flight_;
  return PD3_OK;
}

void Tier::start_writeback(FrameId f) {
  Frame& fr = pool_->at(f);
  if (submit_write(f) != PD3_OK) {
    fr.retry_ns = now_ns() + kRetryNs;
    error("write-back of page %llu of region %#x not started: %s", (unsigned long long)fr.page,
          unsigned(fr.file->region), pd3_last_error());
  }
}

bool Tier::on_io() {
  std::vector<IoCompletion> done;
  io_->reap(&done);
  for (const IoCompletion& c : done) {
    if (c.tag & kSyncTag) {
      on_sync_done(c.result);
      continue;
    }
    --in_flight_;
    const FrameId f = FrameId(c.tag);
    Frame& fr = pool_->at(f);
    const uint32_t region = fr.file->region;
    const bool ok = c.result >= 0;
    if (fr.state == Frame::State::kLoading) {
      if (!ok) {
        error("read of page %llu of region %#x failed: %s", (unsigned long long)fr.page, unsigned(region),
              strerror(int(-c.result)));
        if (!fr.file->dropped && !fr.prefetched) failed_reads_[page_key(region, fr.page)] = PD3_E_SYS;
        pool_->empty(f);
        continue;
      }
      pool_->fill(f);
      if (fr.file->dropped) {
        pool_->empty(f);
        continue;
      }
      eviction_->on_fill(f);
      continue;
    }
    assert(fr.state == Frame::State::kWriting);
    fr.state = Frame::State::kResident;
    const uint64_t ticket = std::exchange(fr.flush_ticket, 0);
    if (ok) {
      pool_->set_dirty(f, false);
      ++stats_.writebacks;
      stats_.writeback_bytes += uint64_t(c.result);
    } else {
      fr.retry_ns = now_ns() + kRetryNs;  // stays dirty and resident: the frame is not reused
      error("write of page %llu of region %#x failed (the page stays in DRAM): %s", (unsigned long long)fr.page,
            unsigned(region), strerror(int(-c.result)));
    }
    if (fr.file->dropped) {
      eviction_->on_drop(f);
      pool_->empty(f);
    }
    if (ticket != 0) on_flushed(ticket, c.result);
  }
  return !done.empty();
}

void Tier::copy_out(uint32_t id, uint64_t offset, uint64_t len, uint8_t* dst) const {
  const RegionFile* file = region(id);
  const uint32_t ps = pool_->page_size();
  while (len > 0) {
    const uint64_t page = offset / ps, in = offset % ps;
    const uint64_t n = std::min<uint64_t>(len, ps - in);
    const FrameId f = file->pages[page];
    assert(f != kNoFrame && pool_->at(f).pins > 0);  // acquire() pinned it
    std::memcpy(dst, pool_->memory(f) + in, n);
    dst += n;
    offset += n;
    len -= n;
  }
}

const uint8_t* Tier::page_bytes(uint32_t id, uint64_t offset, [[maybe_unused]] uint64_t len) const {
  assert(len > 0 && offset + len <= page_end(offset));  // one page
  const FrameId f = region(id)->pages[offset / pool_->page_size()];
  assert(f != kNoFrame && pool_->at(f).pins > 0);  // acquire() pinned it
  return pool_->memory(f) + offset % pool_->page_size();
}

void Tier::copy_in(uint32_t id, uint64_t offset, const uint8_t* src, uint64_t len) {
  RegionFile* file = region(id);
  const uint32_t ps = pool_->page_size();
  bool listed_file = false;
  while (len > 0) {
    const uint64_t page = offset / ps, in = offset % ps;
    const uint64_t n = std::min<uint64_t>(len, ps - in);
    const FrameId f = file->pages[page];
    Frame& fr = pool_->at(f);
    // acquire(write) waited for it, or claimed it for this write
    assert(f != kNoFrame && fr.pins > 0 && (fr.state == Frame::State::kResident || fr.state == Frame::State::kFilling));
    std::memcpy(pool_->memory(f) + in, src, n);
    if (fr.state == Frame::State::kFilling) {
      assert(in == 0 && n == page_len(*file, page));  // claimed only for a write covering it whole
      pool_->fill(f);
    }
    pool_->mark_dirty(f, uint32_t(in), uint32_t(in + n));
    // Listed in both sync modes: every frame's writes reach the file (page cache) before its
    // response, so a SIGKILL of the server loses nothing acknowledged.
    if (!fr.in_sync) {
      fr.in_sync = true;
      to_sync_.emplace_back(f, fr.seq);
      if (options_.durable && !listed_file) sync_files_.push_back(fr.file);
      listed_file = true;
    }
    src += n;
    offset += n;
    len -= n;
  }
}

TierStats Tier::stats() const {
  TierStats s = stats_;
  s.resident_pages = pool_->resident();
  s.dirty_pages = pool_->dirty();
  if (registrations_) {
    const FrameRegistrationStats r = registrations_->stats();
    s.registering = true;
    s.mr_hits = r.hits;
    s.mr_misses = r.misses;
    s.mr_failures = r.failures;
    s.mr_deregistrations = r.deregistrations;
    s.mr_pinned_bytes = r.pinned_bytes;
  }
  return s;
}

}  // namespace pd3::tier
