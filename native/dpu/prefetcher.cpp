// prefetcher.cpp — the prefetcher's rules (Table 1, Table 2, docs/architecture.md §8), its asynchronous
// Host View traffic and its prefetches from READ to Loading Zone.
#include "dpu/prefetcher.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include "common/error.hpp"
#include "pd3/parser.h"
#include "pd3/status.h"
#include "pd3/wire.h"

namespace pd3 {

namespace {

constexpr uint32_t kMaxLookupBatch = 4096;
constexpr uint32_t kMaxServerBits = 32;  // servers_up() is a 32-bit mask
constexpr uint64_t kMaxHostViewBacklog = uint64_t(1) << 30;

std::string_view key_view(const uint8_t* key, uint32_t len) { return {reinterpret_cast<const char*>(key), len}; }
bool valid_key(const uint8_t* key, uint32_t len) { return key != nullptr && len != 0 && len <= PD3_MAX_KEY_LEN; }

// Moves a batch being filled (if any) to the end of a queue of sealed batches.
void seal(int* open, std::deque<uint32_t>* to) {
  if (*open < 0) return;
  to->push_back(uint32_t(*open));
  *open = -1;
}

}  // namespace

// The counters: one writer (the engine thread), readers on any thread. Every access is relaxed:
// each counter is an independent statistic that publishes no other memory.
struct Prefetcher::Counters {
#define PD3_PREFETCHER_COUNTER(name) std::atomic<uint64_t> name{0};
  PD3_PREFETCHER_STATS_FIELDS(PD3_PREFETCHER_COUNTER)
#undef PD3_PREFETCHER_COUNTER
  LatencyHistogram lead;  // capture → item in zone
};

namespace {

// Single writer: a relaxed load and store instead of a locked read-modify-write (see Counters).
void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
void set(std::atomic<uint64_t>& gauge, uint64_t v) { gauge.store(v, std::memory_order_relaxed); }

}  // namespace

// One Host View batch: the arrays the shard thread reads and writes while it holds the batch, and
// what each item stands for.
struct Prefetcher::Work {
  HostViewOp op = HostViewOp::kLookup;
  uint32_t n = 0;
  std::unique_ptr<uint64_t[]> hashes;
  std::unique_ptr<uint8_t[]> verdicts;
  // Lookup: gen << 16 | id of the entry that asked. Insert: 1 when a client wrote the key (a
  // failed insert must then mark the key unflushed). Erase: unused.
  std::unique_ptr<uint64_t[]> refs;
};

// One shard's Host View work that is not yet back: the batches being filled, the sealed ones
// waiting for room in the shard's queue (in order) and how many the shard holds.
struct Prefetcher::ShardWork {
  int open_insert = -1;
  int open_erase = -1;
  int open_lookup = -1;
  std::deque<uint32_t> updates;  // sealed inserts and erases, submitted first
  std::deque<uint32_t> lookups;  // sealed lookups
  uint32_t submitted = 0;
};

Prefetcher::Prefetcher(const PrefetcherOptions& o, HostView* hv, LzProducer* zone, PrefetchPort* port)
    : options_(o),
      host_view_(hv),
      zone_(zone),
      port_(port),
      table_(o.max_inflight),
      shards_(hv ? hv->shards() : 0),
      counters_(std::make_unique<Counters>()) {}

int Prefetcher::create(const PrefetcherOptions& o, HostView* hv, LzProducer* zone, PrefetchPort* port,
                       std::unique_ptr<Prefetcher>* out) {
  clear_error();
  if (out == nullptr || zone == nullptr || port == nullptr)
    return fail(PD3_E_INVAL, "prefetcher needs a Loading Zone producer, a port and an output pointer");
  if (o.max_inflight == 0 || o.max_inflight > PD3_MAX_INFLIGHT)
    return fail(PD3_E_INVAL, "max_inflight %u outside [1, %u] (prefetch ids are 14-bit)", o.max_inflight,
                PD3_MAX_INFLIGHT);
  if (o.max_item_bytes == 0 || o.max_item_bytes > PD3_MAX_ITEM_SIZE)
    return fail(PD3_E_INVAL, "max_item_bytes %u outside [1, %u]", o.max_item_bytes, PD3_MAX_ITEM_SIZE);
  if (o.lookup_batch == 0 || o.lookup_batch > kMaxLookupBatch)
    return fail(PD3_E_INVAL, "lookup_batch %u outside [1, %u]", o.lookup_batch, kMaxLookupBatch);
  if (o.host_view_backlog == 0 || o.host_view_backlog > kMaxHostViewBacklog)
    return fail(PD3_E_INVAL, "host_view_backlog %llu outside [1, %llu]", (unsigned long long)o.host_view_backlog,
                (unsigned long long)kMaxHostViewBacklog);
  std::unique_ptr<KeyDirectory> directory;
  if (const int rc = KeyDirectory::create(o.directory_keys, &directory)) return rc;
  std::unique_ptr<UnflushedKeys> unflushed;
  if (const int rc = UnflushedKeys::create(o.unflushed_keys, &unflushed)) return rc;
  try {
    std::unique_ptr<Prefetcher> p(new Prefetcher(o, hv, zone, port));
    p->directory_ = std::move(directory);
    p->unflushed_ = std::move(unflushed);
    *out = std::move(p);
  } catch (const std::bad_alloc&) {
    return fail(PD3_E_NOMEM, "prefetcher with %u entries", o.max_inflight);
  }
  return PD3_OK;
}

Prefetcher::~Prefetcher() {
  // The shard threads may still write verdicts into our arrays: wait until every batch is back.
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    while (shards_[s].submitted > 0) {
      HostViewBatch b;
      if (host_view_->complete(s, &b)) {
        --shards_[s].submitted;
      } else {
        std::this_thread::yield();
      }
    }
  }
}

// ---- client accesses and Table 2 events -----------------------------------------------------

void Prefetcher::on_access(const AccessRecord& a, uint64_t /*now*/) {
  Counters& c = *counters_;
  if (!valid_key(a.key, a.key_len)) return bump(c.bad_accesses);
  const std::string_view key = key_view(a.key, a.key_len);
  const uint64_t hash = host_view_key_hash(a.key, a.key_len);
  switch (a.op) {
    case PD3_ACCESS_READ: {
      bump(c.reads);
      if (table_.find(key, hash) >= 0) return bump(c.deduplicated);
      // Its remote copy is older than what a client wrote: the host serves it, not the zone.
      if (unflushed_->contains(hash)) return bump(c.skipped_unflushed);
      const int id = table_.acquire(key, hash, a.capture_ns);
      if (id < 0) return bump(c.skipped);
      if (host_view_ != nullptr) return queue_lookup(uint32_t(id));
      return make_ready(uint32_t(id));
    }
    case PD3_ACCESS_WRITE:
      bump(c.writes);
      // The host now holds the newest value: Host View says so, and that suppresses prefetches of
      // the key until it is flushed. Without a Host View the unflushed set does the same.
      if (host_view_ != nullptr) {
        queue_update(HostViewOp::kInsert, hash, true);
      } else {
        unflushed_->add(hash);
      }
      break;
    case PD3_ACCESS_DELETE:
      bump(c.deletes);
      if (host_view_ != nullptr) queue_update(HostViewOp::kErase, hash, false);
      // The remote copy still holds the deleted value until the host flushes the key.
      unflushed_->add(hash);
      break;
    default:
      return bump(c.bad_accesses);
  }
  zone_->invalidate(a.key, a.key_len);
  cancel(hash, a.key, a.key_len, false);
}

void Prefetcher::on_host_flush(const uint8_t* key, uint32_t len, int server_id) {
  Counters& c = *counters_;
  if (!valid_key(key, len)) return bump(c.bad_accesses);
  bump(c.host_flushes);
  const uint64_t hash = host_view_key_hash(key, len);
  directory_->learn(hash, server_id);
  unflushed_->remove(hash);
  if (host_view_ != nullptr) queue_update(HostViewOp::kErase, hash, false);
  // A prefetch the server may have executed before the flush can carry the older value. One not
  // yet sent will reach the server behind the flush (same connection, in order): it is kept.
  cancel(hash, key, len, true);
}

void Prefetcher::on_host_read(const uint8_t* key, uint32_t len) {
  Counters& c = *counters_;
  if (!valid_key(key, len)) return bump(c.bad_accesses);
  bump(c.host_reads);
  if (host_view_ != nullptr) queue_update(HostViewOp::kInsert, host_view_key_hash(key, len), false);
}

void Prefetcher::cancel(uint64_t hash, const uint8_t* key, uint32_t len, bool sent_only) {
  const int found = table_.find(key_view(key, len), hash);
  if (found < 0) return;
  const uint32_t id = uint32_t(found);
  PrefetchEntry& e = table_.at(id);
  if (sent_only && !e.sent_any) return;
  bump(counters_->cancelled);
  // Out of the index: its answers are dropped, and a new READ of the key starts a new prefetch.
  table_.unindex(id);
  e.unsent = 0;
  if (e.waiting != 0) return;  // the id stays taken until every server it went to has answered
  held_bytes_ -= e.held.size();
  table_.release(id);  // stale references in lookup batches and the ready queue see the new gen
}

void Prefetcher::cancel_all() {
  for (uint32_t id = 0; id < table_.size(); ++id) {
    PrefetchEntry& e = table_.at(id);
    if (e.state == PrefetchState::kFree || !e.indexed) continue;
    cancel(e.hash, reinterpret_cast<const uint8_t*>(e.key.data()), uint32_t(e.key.size()), /*sent_only=*/false);
  }
}

// ---- Host View work -------------------------------------------------------------------------

uint32_t Prefetcher::new_work(HostViewOp op) {
  uint32_t w;
  if (!free_works_.empty()) {
    w = free_works_.back();
    free_works_.pop_back();
  } else {
    w = uint32_t(works_.size());
    Work& fresh = works_.emplace_back();
    fresh.hashes.reset(new uint64_t[options_.lookup_batch]);
    fresh.verdicts.reset(new uint8_t[options_.lookup_batch]);
    fresh.refs.reset(new uint64_t[options_.lookup_batch]);
  }
  works_[w].op = op;
  works_[w].n = 0;
  return w;
}

void Prefetcher::queue_lookup(uint32_t id) {
  const PrefetchEntry& e = table_.at(id);
  const uint32_t s = host_view_->shard_of(e.hash);
  ShardWork& sw = shards_[s];
  if (sw.open_lookup < 0) sw.open_lookup = int(new_work(HostViewOp::kLookup));
  Work& w = works_[uint32_t(sw.open_lookup)];
  w.hashes[w.n] = e.hash;
  w.refs[w.n] = uint64_t(e.gen) << 16 | id;
  ++w.n;
  bump(counters_->lookups);
  if (w.n == options_.lookup_batch) {
    seal(&sw.open_lookup, &sw.lookups);
    flush_shard(s);
  }
}

// Order: a key's inserts and erases reach its shard in the order they were queued, and every
// lookup queued after an update of its key is submitted after it (a shard executes its queue in
// order). Two open update batches per shard (one per op) keep batches full; an op whose key sits
// in the other open batch seals that batch first, so a key's updates never overtake each other.
void Prefetcher::queue_update(HostViewOp op, uint64_t hash, bool client_write) {
  const uint32_t s = host_view_->shard_of(hash);
  ShardWork& sw = shards_[s];
  int& open = op == HostViewOp::kInsert ? sw.open_insert : sw.open_erase;
  int& other = op == HostViewOp::kInsert ? sw.open_erase : sw.open_insert;
  if (other >= 0) {
    const Work& o = works_[uint32_t(other)];
    for (uint32_t i = 0; i < o.n; ++i) {
      if (o.hashes[i] == hash) {
        seal(&other, &sw.updates);
        break;
      }
    }
  }
  if (open < 0) {
    // Lookups need no bound of their own (each holds a prefetch entry); updates do.
    if (sw.updates.size() * options_.lookup_batch >= options_.host_view_backlog) {
      // The shard is far behind. Dropping is safe: a lost erase leaves the key "held" (its
      // prefetches are suppressed), a lost insert only costs prefetches, and a lost insert of a
      // client-written key is recorded as unflushed instead, which suppresses them the same way.
      if (client_write) unflushed_->add(hash);
      return bump(counters_->host_view_dropped);
    }
    open = int(new_work(op));
  }
  Work& w = works_[uint32_t(open)];
  w.hashes[w.n] = hash;
  w.refs[w.n] = client_write ? 1 : 0;
  ++w.n;
  if (w.n == options_.lookup_batch) {
    seal(&open, &sw.updates);
    flush_shard(s);
  }
}

bool Prefetcher::submit_all(uint32_t s, std::deque<uint32_t>* q) {
  while (!q->empty()) {
    const Work& w = works_[q->front()];
    if (!host_view_->submit(s, HostViewBatch{w.op, w.n, w.hashes.get(), w.verdicts.get(), q->front()}))
      return false;  // the shard's queue is full: the rest waits, in order, for the next pump
    q->pop_front();
    ++shards_[s].submitted;
  }
  return true;
}

void Prefetcher::flush_shard(uint32_t s) {
  ShardWork& sw = shards_[s];
  // Sealed updates go first; the open ones are sealed only once those are gone, so that while the
  // shard is behind, partial batches keep filling and it is handed full ones.
  if (!submit_all(s, &sw.updates)) return;
  seal(&sw.open_insert, &sw.updates);
  seal(&sw.open_erase, &sw.updates);
  if (!submit_all(s, &sw.updates)) return;
  // Every update queued so far is submitted: lookups may follow.
  if (!submit_all(s, &sw.lookups)) return;
  seal(&sw.open_lookup, &sw.lookups);
  submit_all(s, &sw.lookups);
}

void Prefetcher::collect() {
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    HostViewBatch b;
    while (host_view_->complete(s, &b)) {
      --shards_[s].submitted;
      finish_work(uint32_t(b.tag));
    }
  }
}

void Prefetcher::finish_work(uint32_t wi) {
  Work& w = works_[wi];
  Counters& c = *counters_;
  switch (w.op) {
    case HostViewOp::kLookup:
      for (uint32_t i = 0; i < w.n; ++i) {
        const uint32_t id = uint32_t(w.refs[i] & 0xFFFF);
        const uint32_t gen = uint32_t(w.refs[i] >> 16);
        PrefetchEntry& e = table_.at(id);
        if (e.gen != gen || e.state != PrefetchState::kLookup) continue;  // cancelled meanwhile
        if (w.verdicts[i]) {
          bump(c.host_view_hits);
          table_.release(id);
        } else if (unflushed_->contains(e.hash)) {  // e.g. its client write did not fit Host View
          bump(c.skipped_unflushed);
          table_.release(id);
        } else {
          make_ready(id);
        }
      }
      break;
    case HostViewOp::kInsert:
      for (uint32_t i = 0; i < w.n; ++i) {
        if (w.refs[i] == 0 || w.verdicts[i]) continue;
        // Host View is full and does not know the host holds this client-written key: keep it
        // from being prefetched through the unflushed set instead.
        bump(c.host_view_full);
        unflushed_->add(w.hashes[i]);
      }
      break;
    case HostViewOp::kErase:
      break;
  }
  free_works_.push_back(wi);
}

bool Prefetcher::host_view_idle() const {
  for (const ShardWork& sw : shards_)
    if (sw.submitted || sw.open_insert >= 0 || sw.open_erase >= 0 || sw.open_lookup >= 0 || !sw.updates.empty() ||
        !sw.lookups.empty())
      return false;
  return true;
}

// ---- prefetches -------------------------------------------------------------------------------

void Prefetcher::pump(uint64_t now) {
  if (host_view_ != nullptr) {
    collect();
    for (uint32_t s = 0; s < shards_.size(); ++s) flush_shard(s);
  }
  send_ready(now);
  zone_->clean();
  update_gauges();
}

void Prefetcher::make_ready(uint32_t id) {
  PrefetchEntry& e = table_.at(id);
  e.state = PrefetchState::kReady;
  // References to cancelled entries stay queued until the send loop reaches them; while the port
  // pushes back they could pile up, so they are swept once they outnumber the entries.
  if (ready_.size() >= 2 * size_t(table_.size())) {
    std::erase_if(ready_, [&](const std::pair<uint16_t, uint32_t>& r) {
      const PrefetchEntry& q = table_.at(r.first);
      return q.gen != r.second || q.state != PrefetchState::kReady;
    });
  }
  ready_.emplace_back(uint16_t(id), e.gen);
}

void Prefetcher::route(PrefetchEntry& e) {
  const uint32_t up = port_->servers_up();
  const int server = directory_->server_of(e.hash);
  if (server != KeyDirectory::kUnknown) {
    e.unsent = up & (uint32_t(1) << server);  // its server is down: nowhere else holds the key
  } else {
    e.unsent = up;
    e.broadcast = std::popcount(up) > 1;
    if (e.broadcast) bump(counters_->broadcasts);
  }
  e.routed = true;
}

void Prefetcher::send_ready(uint64_t now) {
  while (!ready_.empty()) {
    const auto [id, gen] = ready_.front();
    PrefetchEntry& e = table_.at(id);
    if (e.gen != gen || e.state != PrefetchState::kReady) {
      ready_.pop_front();
      continue;
    }
    if (!e.routed) route(e);
    while (e.unsent != 0) {
      const int s = std::countr_zero(e.unsent);
      const uint32_t bit = uint32_t(1) << s;
      const int rc = port_->send_prefetch(s, pd3_op_id(PD3_OP_PREFETCH, id), reinterpret_cast<const uint8_t*>(e.key.data()),
                                          uint16_t(e.key.size()), options_.max_item_bytes, now);
      if (rc == PD3_E_AGAIN) return;  // no room: this entry and those behind it go at the next pump
      e.unsent &= ~bit;
      if (rc == PD3_OK) {
        e.waiting |= bit;
        if (!e.sent_any) bump(counters_->prefetches);
        e.sent_any = true;
        bump(counters_->requests);
      } else {
        e.incomplete = true;
      }
    }
    ready_.pop_front();
    e.state = PrefetchState::kInflight;
    if (e.waiting == 0) finish(id, now, nullptr, 0);
  }
}

void Prefetcher::on_response(uint16_t op_id, int server_id, int status, const uint8_t* key, uint16_t key_len,
                             const uint8_t* data, uint32_t size, uint64_t now) {
  Counters& c = *counters_;
  const uint32_t id = pd3_id_of(op_id);
  if (pd3_op_of(op_id) != PD3_OP_PREFETCH || id >= table_.size() || server_id < 0 ||
      uint32_t(server_id) >= kMaxServerBits)
    return bump(c.stale_responses);
  PrefetchEntry& e = table_.at(id);
  const uint32_t bit = uint32_t(1) << server_id;
  const bool live = e.state == PrefetchState::kReady || e.state == PrefetchState::kInflight;
  if (!live || (e.waiting & bit) == 0) return bump(c.stale_responses);
  e.waiting &= ~bit;
  const bool last = e.routed && e.unsent == 0 && e.waiting == 0;
  const uint8_t* direct = nullptr;
  if (e.indexed) {  // a cancelled prefetch only counts its answers down
    if (status == PD3_OK) {
      const bool well_formed = key != nullptr && key_len == e.key.size() &&
                               std::memcmp(key, e.key.data(), key_len) == 0 && size <= options_.max_item_bytes &&
                               (size == 0 || data != nullptr);
      if (!well_formed) {
        ++e.failed;
      } else if (++e.oks == 1) {
        if (last) {
          direct = data;
        } else if (held_bytes_ + size <= options_.broadcast_hold_bytes) {
          e.held.assign(data, data + size);
          held_bytes_ += size;
        } else {
          e.held_dropped = true;
        }
      }
    } else if (status == PD3_E_DEST_SMALL) {
      ++e.dest_small;
    } else if (status != PD3_E_NOT_FOUND) {
      ++e.failed;
    }
  }
  if (last) finish(id, now, direct, direct != nullptr ? size : 0);
}

// Every server the prefetch went to has answered (or failed): decide, then free the id. A
// broadcast counts only if exactly one server holds the key: two holders mean one holds an older
// copy, and nothing says which.
void Prefetcher::finish(uint32_t id, uint64_t now, const uint8_t* data, uint32_t size) {
  PrefetchEntry& e = table_.at(id);
  Counters& c = *counters_;
  if (e.indexed) {
    if (!e.sent_any || e.incomplete) {
      bump(c.unavailable);
    } else if (e.oks + e.dest_small > 1) {
      bump(c.conflicts);
    } else if (e.failed != 0 || (e.oks == 1 && data == nullptr && e.held_dropped)) {
      bump(c.errors);
    } else if (e.oks == 1) {
      if (data != nullptr) {
        produce(id, data, size, now);
      } else {
        produce(id, e.held.data(), uint32_t(e.held.size()), now);
      }
    } else if (e.dest_small != 0) {
      bump(c.dest_small);
    } else {
      bump(c.not_found);
    }
  }
  held_bytes_ -= e.held.size();
  table_.release(id);
}

void Prefetcher::produce(uint32_t id, const uint8_t* data, uint32_t size, uint64_t now) {
  PrefetchEntry& e = table_.at(id);
  Counters& c = *counters_;
  if (size == 0) return bump(c.empty);  // an empty item could not be told from a miss
  const int64_t seq = zone_->produce(pd3_op_id(PD3_OP_PREFETCH, id), e.key.data(), uint32_t(e.key.size()), data, size);
  if (seq <= 0) return bump(c.errors);  // larger than the zone can ever hold
  bump(c.produced);
  // Table 2: the key of a prefetch response enters Host View (the host is about to take it).
  if (host_view_ != nullptr) queue_update(HostViewOp::kInsert, e.hash, false);
  const uint64_t lead = now > e.capture_ns ? now - e.capture_ns : 0;
  bump(c.lead_count);
  bump(c.lead_sum_ns, lead);
  if (lead > c.lead_max_ns.load(std::memory_order_relaxed)) set(c.lead_max_ns, lead);  // relaxed: see Counters
  c.lead.record(lead);
}

void Prefetcher::on_server_lost(int server_id) {
  if (server_id < 0 || uint32_t(server_id) >= kMaxServerBits) return;
  const uint32_t bit = uint32_t(1) << server_id;
  for (uint32_t id = 0; id < table_.size(); ++id) {
    PrefetchEntry& e = table_.at(id);
    if (e.state != PrefetchState::kReady && e.state != PrefetchState::kInflight) continue;
    if (((e.unsent | e.waiting) & bit) == 0) continue;
    e.unsent &= ~bit;
    e.waiting &= ~bit;
    e.incomplete = true;
    // Ready entries still in the send queue are finished there once nothing is left to send.
    if (e.state == PrefetchState::kInflight && e.waiting == 0) finish(id, 0, nullptr, 0);
  }
}

void Prefetcher::update_gauges() {
  Counters& c = *counters_;
  set(c.inflight, table_.in_use());
  set(c.directory_keys, directory_->size());
  set(c.unflushed_keys, unflushed_->size());
  set(c.unflushed_overflows, unflushed_->overflows());
}

PrefetcherStats Prefetcher::stats() const {
  PrefetcherStats s;
  const Counters& c = *counters_;
  // relaxed: see Counters.
#define PD3_PREFETCHER_LOAD(name) s.name = c.name.load(std::memory_order_relaxed);
  PD3_PREFETCHER_STATS_FIELDS(PD3_PREFETCHER_LOAD)
#undef PD3_PREFETCHER_LOAD
  return s;
}

LatencyHistogram::Snapshot Prefetcher::lead_histogram() const { return counters_->lead.snapshot(); }

}  // namespace pd3
