// host_view.cpp — shard threads and batch routing for Host View.
#include "dpu/host_view.hpp"

#include <algorithm>

#include "common/net.hpp"
#include "pd3/status.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pd3 {

// One shard: its table, its two queues and the thread that owns them.
struct HostView::Shard {
  std::unique_ptr<CuckooSet> table;
  SpscQueue<HostViewBatch> in;
  SpscQueue<HostViewBatch> out;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> asleep{0};  // 1 while the thread waits (futex) for work
  AgentDoorbell* completions = nullptr;   // HostViewOptions::completions
  uint64_t idle_spin_ns = 0;         // HostViewOptions::idle_spin_us, in ns
  std::thread thread;

  explicit Shard(size_t depth) : in(depth), out(depth) {}

  void loop() {
    uint64_t last_work = now_ns();
    HostViewBatch b;
    // relaxed: stop only ends the loop; batches are ordered by the queues' own acquire/release.
    while (!stop.load(std::memory_order_relaxed)) {
      if (!in.pop(&b)) {
        // Spin for the configured time (batches come in bursts), then sleep until a submit wakes
        // us. The time bound matters where the shard shares its core: every spin there delays the
        // submitter, which waits for this very shard in run().
        if (idle_spin_ns > 0 && now_ns() - last_work < idle_spin_ns) {
#if defined(__x86_64__)
          _mm_pause();
#endif
        } else {
          sleep_until_work();
          last_work = now_ns();
        }
        continue;
      }
      execute(b);
      last_work = now_ns();
      while (!out.push(b) && !stop.load(std::memory_order_relaxed)) std::this_thread::yield();  // the submitter drains completions (or we are stopping)
      if (completions) completions->ring();
    }
  }

  // Dekker handshake with wake(): we publish `asleep` then look at the queue; the submitter
  // publishes its batch then looks at `asleep`. The seq_cst fences make at least one side see the
  // other's write, so a batch is never left waiting for a sleeping shard.
  void sleep_until_work() {
    asleep.store(1, std::memory_order_relaxed);  // relaxed: ordered by the fence below
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (in.empty() && !stop.load(std::memory_order_relaxed)) asleep.wait(1, std::memory_order_acquire);
    asleep.store(0, std::memory_order_relaxed);  // relaxed: only a hint to submitters
  }

  // Called by the submitter after a push (and by the destructor after setting stop).
  void wake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the fence in sleep_until_work
    if (asleep.load(std::memory_order_relaxed) == 1) {   // relaxed: ordered by the fence above
      asleep.store(0, std::memory_order_relaxed);
      asleep.notify_one();
    }
  }

  void execute(const HostViewBatch& b) {
    switch (b.op) {
      case HostViewOp::kLookup:
        table->contains_batch(b.hashes, b.n, b.verdicts);
        break;
      case HostViewOp::kInsert:
        for (uint32_t i = 0; i < b.n; ++i) b.verdicts[i] = table->insert(b.hashes[i]) == PD3_OK;
        break;
      case HostViewOp::kErase:
        for (uint32_t i = 0; i < b.n; ++i) b.verdicts[i] = table->erase(b.hashes[i]);
        break;
    }
  }
};

HostView::HostView(uint32_t shards) { shards_.reserve(shards); }

int HostView::create(const HostViewOptions& o, std::unique_ptr<HostView>* out) {
  if (o.shards > 64 || o.capacity == 0 || o.queue_depth == 0 || o.idle_spin_us > kMaxHostViewSpinUs)
    return PD3_E_INVAL;
  // No shard threads: one table, which the submitting thread works on itself.
  const uint32_t tables = std::max<uint32_t>(o.shards, 1);
  std::unique_ptr<HostView> hv(new HostView(tables));
  hv->inline_ = o.shards == 0;
  for (uint32_t s = 0; s < tables; ++s) {
    auto shard = std::make_unique<Shard>(o.queue_depth);
    shard->completions = o.completions;
    shard->idle_spin_ns = uint64_t(o.idle_spin_us) * 1000;
    CuckooOptions t = o.table;
    t.capacity = (o.capacity + tables - 1) / tables;
    t.seed = o.table.seed + s;
    if (const int rc = CuckooSet::create(t, &shard->table)) return rc;
    hv->shards_.push_back(std::move(shard));
  }
  if (!hv->inline_)
    for (auto& s : hv->shards_) s->thread = std::thread([p = s.get()] { p->loop(); });
  *out = std::move(hv);
  return PD3_OK;
}

HostView::~HostView() {
  for (auto& s : shards_) {
    s->stop.store(true, std::memory_order_relaxed);  // relaxed: see loop(); wake() fences
    s->wake();
  }
  for (auto& s : shards_)
    if (s->thread.joinable()) s->thread.join();
}

bool HostView::submit(uint32_t shard, const HostViewBatch& batch) {
  Shard& s = *shards_[shard];
  if (inline_) {
    // The caller's thread owns the table and runs the batch now. Refused, like a full queue,
    // while finished batches it has not taken back fill the out queue. (The copy queued holds
    // pointers to the caller's arrays, so running it after queuing fills the same verdicts.)
    if (!s.out.push(batch)) return false;
    s.execute(batch);
    return true;
  }
  if (!s.in.push(batch)) return false;
  s.wake();
  return true;
}

bool HostView::complete(uint32_t shard, HostViewBatch* batch) { return shards_[shard]->out.pop(batch); }

bool HostView::has_completions() const {
  for (const auto& s : shards_)
    if (!s->out.empty()) return true;
  return false;
}

void HostView::run(HostViewOp op, const uint64_t* hashes, size_t n, uint8_t* verdicts) {
  if (inline_) {  // no queue, no other thread: the one table answers at once
    shards_.front()->execute({op, uint32_t(n), hashes, verdicts, 0});
    return;
  }
  const uint32_t ns = shards();
  // Group by shard (stable), send each group as batches of at most 256, then scatter verdicts.
  std::vector<std::vector<uint64_t>> keys(ns);
  std::vector<std::vector<size_t>> where(ns);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = shard_of(hashes[i]);
    keys[s].push_back(hashes[i]);
    where[s].push_back(i);
  }
  std::vector<std::vector<uint8_t>> got(ns);
  size_t outstanding = 0;
  std::vector<size_t> next(ns, 0);
  for (uint32_t s = 0; s < ns; ++s) got[s].resize(keys[s].size());
  for (bool more = true; more || outstanding > 0;) {
    more = false;
    for (uint32_t s = 0; s < ns; ++s) {
      while (next[s] < keys[s].size()) {
        const uint32_t m = uint32_t(std::min<size_t>(256, keys[s].size() - next[s]));
        if (!submit(s, {op, m, keys[s].data() + next[s], got[s].data() + next[s], 0})) break;
        next[s] += m;
        ++outstanding;
      }
      more |= next[s] < keys[s].size();
      HostViewBatch done;
      while (complete(s, &done)) --outstanding;
    }
    if (outstanding > 0 || more) std::this_thread::yield();
  }
  for (uint32_t s = 0; s < ns; ++s)
    for (size_t j = 0; j < where[s].size(); ++j) verdicts[where[s][j]] = got[s][j];
}

uint64_t HostView::size() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s->table->size();
  return n;
}

uint64_t HostView::bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s->table->bytes();
  return n;
}

PageKind HostView::pages() const { return shards_.front()->table->pages(); }
SimdPath HostView::simd() const { return shards_.front()->table->simd(); }

}  // namespace pd3
