// tier_store_test.cpp — the memory server's store with the SSD tier (a DRAM budget of a few pages):
// random reads and writes against a byte model with both I/O backends and both sync modes, pins
// that keep a waiting request's pages from eviction, restart and SIGKILL with evicted dirty pages
// (every acknowledged write is in the file), PREFETCH by key of a key on a page not in DRAM, and
// injected read and write-back failures surfacing as statuses, never as lost or wrong bytes.
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/transport_codec.hpp"
#include "harness.hpp"
#include "memserver/key_index.hpp"
#include "memserver/mem_store.hpp"
#include "pd3/record.h"
#include "pd3/status.h"
#include "store_requests.hpp"
#include "util.hpp"

namespace {

using pd3test::TempDir;
using pd3test::kv_record;

using pd3::MemStore;
using pd3::MemStoreOptions;
using pd3::SyncMode;
using pd3::TransportRequest;
using Bytes = std::vector<uint8_t>;
using pd3test::Rng;
namespace tier = pd3::tier;

constexpr uint16_t kServer = 3;
constexpr uint32_t kPage = 4096;


MemStoreOptions tiered(const std::string& dir, uint32_t frames, SyncMode sync = SyncMode::kBatch,
                       tier::IoKind io = tier::IoKind::kThreads) {
  MemStoreOptions o;
  o.server_id = kServer;
  o.capacity = 64u << 20;
  o.data_dir = dir;
  o.sync = sync;
  o.index_initial_keys = 1024;
  o.page_size = kPage;
  o.dram_budget = uint64_t(frames) * kPage;
  o.tier_io = io;
  return o;
}

using pd3test::open_store;

// Waits for the tier's next completions (`ms` at most) and reaps them.
void wait_io(MemStore& s, int ms = 1000) {
  pollfd p{s.io_fd(), POLLIN, 0};
  poll(&p, 1, ms);
  s.on_io();
}

using Reply = pd3test::StoreReply;
using pd3test::request;

// Asks prepare() until it stops answering "wait" (at most 1,000 times, each after the tier's next
// completions), as a parked connection does; returns its last answer and counts the waits in *waits.
int prepare_until_ready(MemStore& s, const TransportRequest& req, tier::Pins* pins, int* waits = nullptr) {
  int ready = tier::kWait;
  for (int i = 0; i < 1000 && (ready = s.prepare(req, {}, pins)) == tier::kWait; ++i) {
    if (waits) ++*waits;
    wait_io(s);
  }
  return ready;
}

// The rest of a record once prepare() gave `ready`: execute it or answer the error, release, sync
// (which must succeed unless *synced takes its status); returns its reply.
Reply finish(MemStore& s, const TransportRequest& req, int ready, tier::Pins* pins, int* synced_out = nullptr) {
  REQUIRE(ready != tier::kWait);
  Bytes buf;
  pd3::FrameBuilder fb(&buf);
  if (ready == tier::kReady) s.execute(req, {}, &fb);
  else s.fail_request(req, ready, &fb);
  s.release(pins);
  const int synced = s.sync();
  if (synced_out != nullptr) *synced_out = synced;
  else REQUIRE(synced == PD3_OK);
  pd3::TransportResponse r;
  REQUIRE(pd3::decode_response(buf.data(), buf.size(), &r) == PD3_OK);
  return pd3test::store_reply(r);
}

// What a connection does with one record: prepare until ready (waiting for the tier's I/O), then
// finish it.
Reply run(MemStore& s, const TransportRequest& req, int* waits = nullptr, int* synced_out = nullptr) {
  tier::Pins pins;
  const int ready = prepare_until_ready(s, req, &pins, waits);
  return finish(s, req, ready, &pins, synced_out);
}

uint32_t must_allocate(MemStore& s, uint32_t bytes) {
  const Reply r = run(s, request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, bytes));
  REQUIRE(r.status == PD3_OK && r.data.size() == sizeof(pd3_alloc_reply));
  pd3_alloc_reply a;
  std::memcpy(&a, r.data.data(), sizeof a);
  return a.region;
}

int write_bytes(MemStore& s, uint32_t region, uint32_t off, const Bytes& b) {
  return run(s, request(PD3_OP_WRITE, region, off, uint32_t(b.size()), b.data(), uint32_t(b.size()))).status;
}

Bytes read_bytes(MemStore& s, uint32_t region, uint32_t off, uint32_t len, int* status = nullptr) {
  const Reply r = run(s, request(PD3_OP_READ, region, off, len));
  if (status) *status = r.status;
  return r.data;
}

// Random reads and writes spanning up to three pages over a 16-page region held in 3 frames, each checked
// against a byte model; then the store is reopened (the tier starts empty) and all of it compared.
void model_run(tier::IoKind io, SyncMode sync, uint64_t seed, tier::EvictionKind evict = tier::EvictionKind::kLru) {
  TempDir dir("tier");
  constexpr uint32_t kRegion = 16 * kPage;
  Bytes model(kRegion, 0);
  uint32_t region = 0;
  {
    MemStoreOptions o = tiered(dir.path, 3, sync, io);
    o.evict = evict;
    auto s = open_store(o);
    region = must_allocate(*s, kRegion);
    Rng rng(seed);
    int waits = 0;
    for (int i = 0; i < 600; ++i) {
      const uint32_t len = 1 + rng.below(2 * kPage);  // at most three pages: the pool has three frames
      const uint32_t off = rng.below(kRegion - len + 1);
      if (rng.below(2) == 0) {
        Bytes b(len);
        for (auto& x : b) x = uint8_t(rng.next());
        REQUIRE(write_bytes(*s, region, off, b) == PD3_OK);
        std::memcpy(model.data() + off, b.data(), len);
      } else {
        int status = 0;
        const Reply r = run(*s, request(PD3_OP_READ, region, off, len), &waits);
        status = r.status;
        REQUIRE(status == PD3_OK);
        REQUIRE(r.data.size() == len);
        REQUIRE(std::memcmp(r.data.data(), model.data() + off, len) == 0);
      }
    }
    const pd3::MemStoreStats st = s->stats();
    CHECK(st.tiered);
    CHECK_EQ(st.tier.frames, 3u);
    CHECK(st.tier.resident_pages <= 3);
    CHECK(st.tier.misses > 0 && st.tier.evictions > 0 && st.tier.hits > 0);
    CHECK(st.tier.overwrites > 0);  // writes covering a whole page claimed frames without a read
    CHECK(st.tier.writebacks > 0);
    CHECK(waits > 0);  // reads really waited for the disk
    CHECK_EQ(st.tier.dirty_pages, 0u);  // written through at each sync, in both modes
    CHECK_EQ(st.tier.io_errors, 0u);
  }
  auto s = open_store(tiered(dir.path, 2, sync, io));
  const Bytes all = read_bytes(*s, region, 0, kPage * 2);  // at most two pages per read with 2 frames
  CHECK(std::memcmp(all.data(), model.data(), all.size()) == 0);
  for (uint32_t off = 0; off < kRegion; off += kPage)
    CHECK(read_bytes(*s, region, off, kPage) == Bytes(model.begin() + off, model.begin() + off + kPage));
}

}  // namespace

TEST(tier_store_model_threads_batch) { model_run(tier::IoKind::kThreads, SyncMode::kBatch, 1); }
TEST(tier_store_model_threads_none) { model_run(tier::IoKind::kThreads, SyncMode::kNone, 2); }
TEST(tier_store_model_uring_batch) { model_run(tier::IoKind::kUring, SyncMode::kBatch, 3); }
TEST(tier_store_model_uring_none) { model_run(tier::IoKind::kUring, SyncMode::kNone, 4); }
// Clean-first LRU learns of cleaned pages from the pool (on_clean): by write-backs without sync, by
// the sync's writes with it.
TEST(tier_store_model_cflru_none) { model_run(tier::IoKind::kThreads, SyncMode::kNone, 5, tier::EvictionKind::kCflru); }
TEST(tier_store_model_cflru_batch) { model_run(tier::IoKind::kUring, SyncMode::kBatch, 6, tier::EvictionKind::kCflru); }

TEST(tier_store_bad_options) {
  TempDir dir("tier");
  std::unique_ptr<MemStore> s;
  MemStoreOptions o = tiered(dir.path, 4);
  o.page_size = 3000;
  CHECK(MemStore::open(o, &s) == PD3_E_INVAL);
  o.page_size = 2048;
  CHECK(MemStore::open(o, &s) == PD3_E_INVAL);
  o.page_size = 4u << 20;
  CHECK(MemStore::open(o, &s) == PD3_E_INVAL);
  o = tiered(dir.path, 4);
  o.dram_budget = kPage - 1;
  CHECK(MemStore::open(o, &s) == PD3_E_INVAL);
  o = tiered("", 4);
  CHECK(MemStore::open(o, &s) == PD3_E_INVAL);
  // A request over more pages than the pool has frames is refused, not left waiting forever.
  s = open_store(tiered(dir.path, 2));
  const uint32_t region = must_allocate(*s, 8 * kPage);
  int status = 0;
  read_bytes(*s, region, 0, 3 * kPage, &status);
  CHECK_EQ(status, PD3_E_TOO_BIG);
  read_bytes(*s, region, kPage / 2, 2 * kPage, &status);  // straddles three pages
  CHECK_EQ(status, PD3_E_TOO_BIG);
  CHECK(read_bytes(*s, region, kPage / 2, kPage, &status).size() == kPage && status == PD3_OK);
}

TEST(tier_store_pins_protect_a_waiting_request) {
  TempDir dir("tier");
  auto s = open_store(tiered(dir.path, 2));
  const uint32_t region = must_allocate(*s, 8 * kPage);
  for (uint32_t p = 0; p < 8; ++p) REQUIRE(write_bytes(*s, region, p * kPage, Bytes(kPage, uint8_t(p + 1))) == PD3_OK);
  // A holds page 0 pinned; B needs pages 1 and 2: one frame is free to take, the other is A's.
  const TransportRequest a = request(PD3_OP_READ, region, 0, 16);
  tier::Pins pa, pb;
  REQUIRE(prepare_until_ready(*s, a, &pa) == tier::kReady);
  const TransportRequest b = request(PD3_OP_READ, region, kPage, 2 * kPage);
  for (int i = 0; i < 20; ++i) {
    CHECK_EQ(s->prepare(b, {}, &pb), tier::kWait);
    wait_io(*s, 20);  // B's read of page 1 completes in the first rounds; page 2 never gets a frame
  }
  Bytes buf;
  pd3::FrameBuilder fb(&buf);
  s->execute(a, {}, &fb);  // A's page is still there
  pd3::TransportResponse r;
  REQUIRE(pd3::decode_response(buf.data(), buf.size(), &r) == PD3_OK);
  CHECK(r.status == 0 && r.data_len == 16 && r.data[0] == 1 && r.data[15] == 1);
  s->release(&pa);
  CHECK_EQ(prepare_until_ready(*s, b, &pb), tier::kReady);
  s->release(&pb);
}

TEST(tier_store_prefetch_by_key_on_a_page_not_in_dram) {
  TempDir dir("tier");
  auto s = open_store(tiered(dir.path, 2));
  const uint32_t region = must_allocate(*s, 16 * kPage);
  // A record straddling pages 5 and 6.
  const std::string key = "user:42", value(3000, 'v');
  REQUIRE(write_bytes(*s, region, 6 * kPage - 1000, kv_record(key, value)) == PD3_OK);
  for (uint32_t p = 10; p < 16; ++p) read_bytes(*s, region, p * kPage, 8);  // pushes pages 5, 6 out
  const uint64_t misses = s->stats().tier.misses;
  int waits = 0;
  const Reply r = run(*s, request(PD3_OP_PREFETCH, 0, 0, 4096, key.data(), uint32_t(key.size())), &waits);
  CHECK_EQ(r.status, PD3_OK);
  CHECK(r.data == Bytes(value.begin(), value.end()));
  CHECK(waits > 0);
  CHECK(s->stats().tier.misses >= misses + 2);
  // Unknown key: answered at once.
  const Reply miss = run(*s, request(PD3_OP_PREFETCH, 0, 0, 4096, "nope", 4));
  CHECK_EQ(miss.status, PD3_E_NOT_FOUND);
}

// The agent asks for values up to 64 KiB, so a PREFETCH's span nearly always reaches into the next
// pages; a small record lying in its first page costs that page alone, and one straddling two pages
// still gets the span (as many pages as the frames hold at once, here 4).
TEST(tier_store_prefetch_brings_in_only_the_pages_of_the_record) {
  TempDir dir("tier");
  auto s = open_store(tiered(dir.path, 4));
  const uint32_t region = must_allocate(*s, 16 * kPage);
  const std::string value(100, 'w');
  const Bytes inside = kv_record("inside", value), across = kv_record("across", value);
  REQUIRE(write_bytes(*s, region, 2 * kPage + 10, inside) == PD3_OK);
  REQUIRE(write_bytes(*s, region, 6 * kPage - 50, across) == PD3_OK);
  const auto evict_all = [&] { for (uint32_t p = 10; p < 16; ++p) read_bytes(*s, region, p * kPage, 8); };
  for (const auto& [key, pages] : {std::pair{"inside", 1u}, std::pair{"across", 4u}}) {
    evict_all();
    const uint64_t misses = s->stats().tier.misses;
    int waits = 0;
    const Reply r = run(*s, request(PD3_OP_PREFETCH, 0, 0, 64u << 10, key, 6), &waits);
    CHECK_EQ(r.status, PD3_OK);
    CHECK(r.data == Bytes(value.begin(), value.end()));
    CHECK(waits > 0);
    CHECK_EQ(s->stats().tier.misses - misses, uint64_t(pages));
    // Once resident, answered again without a miss.
    const uint64_t again = s->stats().tier.misses;
    CHECK(run(*s, request(PD3_OP_PREFETCH, 0, 0, 64u << 10, key, 6)).data == Bytes(value.begin(), value.end()));
    CHECK_EQ(s->stats().tier.misses, again);
  }
  // A record overwritten by bytes that are not one: the whole span is brought in, and since nothing
  // parses in it, the record may be one larger than the span (the index entry stays).
  REQUIRE(write_bytes(*s, region, 2 * kPage + 10, Bytes(inside.size(), 0xff)) == PD3_OK);
  evict_all();
  const uint64_t misses = s->stats().tier.misses;
  CHECK_EQ(run(*s, request(PD3_OP_PREFETCH, 0, 0, 64u << 10, "inside", 6)).status, PD3_E_DEST_SMALL);
  CHECK_EQ(s->stats().tier.misses - misses, 4u);
}

namespace {

// A forked writer acknowledges frames of page writes through the tier (its sync after each), and is
// SIGKILLed; every acknowledged write must be in the files. Under SyncMode::kNone too: the
// frame-end write-through puts them in the page cache, which a SIGKILL of the process does not lose.
void sigkill_run(SyncMode sync) {
  TempDir dir("tier");
  int ack[2];
  REQUIRE(pipe(ack) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(ack[0]);
    std::unique_ptr<MemStore> s;
    if (MemStore::open(tiered(dir.path, 2, sync), &s) != PD3_OK) _exit(3);
    // Frames of eight page writes, each page a different byte, acknowledged (synced) frame by
    // frame. With 2 frames, six pages of every frame are evicted dirty within it (their write-back
    // must complete before the frame is reused), and the sync then covers them with fdatasync.
    tier::Pins pins;
    Bytes alloc_buf;
    pd3::FrameBuilder fb(&alloc_buf);
    s->execute(request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, 64 * kPage), {}, &fb);
    for (uint32_t i = 0;; i += 8) {
      for (uint32_t j = i; j < i + 8; ++j) {
        const uint32_t page = (j * 7) % 64;
        Bytes b(kPage, uint8_t(j % 251 + 1));
        const TransportRequest w = request(PD3_OP_WRITE, pd3_region_id(kServer, 1), page * kPage, kPage, b.data(), kPage);
        const int ready = prepare_until_ready(*s, w, &pins);
        Bytes out;
        pd3::FrameBuilder ob(&out);
        s->execute(w, {}, &ob);
        s->release(&pins);
        if (ready != tier::kReady) _exit(4);
      }
      if (s->sync() != PD3_OK) _exit(4);
      uint32_t acked[8];  // one pipe write (atomic): a kill never splits a frame's acknowledgement
      for (uint32_t j = 0; j < 8; ++j) acked[j] = i + j;
      if (write(ack[1], acked, sizeof acked) != sizeof acked) _exit(5);
    }
  }
  close(ack[1]);
  uint32_t last = 0, n = 0;
  while (n < 300 && read(ack[0], &last, sizeof last) == sizeof last) ++n;
  kill(child, SIGKILL);
  while (read(ack[0], &last, sizeof last) == sizeof last) ++n;  // acknowledged before it died
  close(ack[0]);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(n >= 300 && n % 8 == 0);
  // The last acknowledged write of each page is in the file.
  std::vector<int> expect(64, -1);
  for (uint32_t i = 0; i < n; ++i) expect[(i * 7) % 64] = int(i % 251 + 1);
  auto s = open_store(tiered(dir.path, 2, sync));
  CHECK_EQ(s->stats().tier.resident_pages, 0u);
  const uint32_t region = pd3_region_id(kServer, 1);
  for (uint32_t p = 0; p < 64; ++p) {
    const Bytes got = read_bytes(*s, region, p * kPage, kPage);
    REQUIRE(got.size() == kPage);
    // The frame after the last acknowledged one may or may not have landed (it was never answered).
    bool ok = got == Bytes(kPage, uint8_t(expect[p] < 0 ? 0 : expect[p]));
    for (uint32_t j = n; j < n + 8; ++j) ok = ok || ((j * 7) % 64 == p && got == Bytes(kPage, uint8_t(j % 251 + 1)));
    CHECK(ok);
  }
}

}  // namespace

TEST(tier_store_sigkill_keeps_acknowledged_writes_sync_batch) { sigkill_run(SyncMode::kBatch); }
TEST(tier_store_sigkill_keeps_acknowledged_writes_sync_none) { sigkill_run(SyncMode::kNone); }

namespace {

// Fails reads, writes or the key index's fdatasyncs while the switches are on; counts the writes
// and fdatasyncs let through.
struct Faults {
  std::atomic<bool> reads{false}, writes{false}, index_syncs{false};
  std::atomic<uint64_t> read_ops{0}, write_ops{0}, write_bytes{0}, index_fdatasyncs{0}, region_fdatasyncs{0};
};

// Whether `fd` is open on the key index file.
bool is_index_file(int fd) {
  char link[4096];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof link - 1);
  if (n <= 0) return false;
  const std::string path(link, size_t(n));
  const std::string name = std::string("/") + pd3::KeyIndex::kFileName;
  return path.size() >= name.size() && path.compare(path.size() - name.size(), name.size(), name) == 0;
}

MemStoreOptions faulty(const std::string& dir, uint32_t frames, SyncMode sync, const std::shared_ptr<Faults>& f) {
  MemStoreOptions o = tiered(dir, frames, sync);
  o.tier_io_factory = [f](std::unique_ptr<tier::TierIo>* out) {
    return tier::make_thread_io(2, [f](const tier::IoOp& op) {
      // Relaxed: a switch, flipped by the test between requests.
      if (op.kind == tier::IoOp::Kind::kRead && f->reads.load(std::memory_order_relaxed)) return -EIO;
      // Relaxed: a counter the test reads after the op's completion was reaped.
      if (op.kind == tier::IoOp::Kind::kRead) f->read_ops.fetch_add(1, std::memory_order_relaxed);
      if (op.kind == tier::IoOp::Kind::kWrite && f->writes.load(std::memory_order_relaxed)) return -ENOSPC;
      if (op.kind == tier::IoOp::Kind::kWrite) {
        // Relaxed: counters the test reads after the op's completion was reaped.
        f->write_ops.fetch_add(1, std::memory_order_relaxed);
        f->write_bytes.fetch_add(op.len, std::memory_order_relaxed);
      }
      if (op.kind == tier::IoOp::Kind::kSync) {
        const bool index = is_index_file(op.fd);
        if (index && f->index_syncs.load(std::memory_order_relaxed)) return -EIO;
        // Relaxed: as above.
        (index ? f->index_fdatasyncs : f->region_fdatasyncs).fetch_add(1, std::memory_order_relaxed);
      }
      return 0;
    }, out);
  };
  return o;
}

}  // namespace

TEST(tier_store_read_failure_is_a_status) {
  TempDir dir("tier");
  auto faults = std::make_shared<Faults>();
  auto s = open_store(faulty(dir.path, 2, SyncMode::kBatch, faults));
  const uint32_t region = must_allocate(*s, 8 * kPage);
  REQUIRE(write_bytes(*s, region, 5 * kPage, Bytes(100, 9)) == PD3_OK);
  for (uint32_t p = 0; p < 3; ++p) read_bytes(*s, region, p * kPage, 4);  // page 5 leaves DRAM
  faults->reads = true;
  int status = 0;
  read_bytes(*s, region, 5 * kPage, 100, &status);
  CHECK_EQ(status, PD3_E_SYS);
  CHECK(s->stats().tier.io_errors >= 1);
  CHECK(!s->take_io_errors().empty());
  faults->reads = false;
  CHECK(read_bytes(*s, region, 5 * kPage, 100, &status) == Bytes(100, 9));
  CHECK_EQ(status, PD3_OK);
}

TEST(tier_store_failed_writeback_keeps_the_page) {
  TempDir dir("tier");
  auto faults = std::make_shared<Faults>();
  uint32_t region = 0;
  {
    auto s = open_store(faulty(dir.path, 2, SyncMode::kNone, faults));
    region = must_allocate(*s, 8 * kPage);
    faults->writes = true;
    // The frame-end write-through fails: the writes are not acknowledged (a connection is closed).
    int synced = PD3_OK;
    CHECK_EQ(run(*s, request(PD3_OP_WRITE, region, 0, kPage, Bytes(kPage, 1).data(), kPage), nullptr, &synced).status,
             PD3_OK);
    CHECK_EQ(synced, PD3_E_NOSPACE);
    CHECK_EQ(run(*s, request(PD3_OP_WRITE, region, kPage, kPage, Bytes(kPage, 2).data(), kPage), nullptr, &synced).status,
             PD3_OK);
    CHECK_EQ(synced, PD3_E_NOSPACE);
    // Both frames hold dirty pages whose writes failed: a third page cannot come in.
    int status = 0;
    CHECK_EQ(run(*s, request(PD3_OP_READ, region, 2 * kPage, 8), nullptr, &synced).status, PD3_E_NOSPACE);
    pd3::MemStoreStats st = s->stats();
    CHECK_EQ(st.tier.dirty_pages, 2u);
    CHECK(st.tier.io_errors >= 2);
    CHECK_EQ(st.tier.writebacks, 0u);
    // The dirty pages still read back.
    CHECK(run(*s, request(PD3_OP_READ, region, 0, kPage), nullptr, &synced).data == Bytes(kPage, 1));
    CHECK(run(*s, request(PD3_OP_READ, region, kPage, kPage), nullptr, &synced).data == Bytes(kPage, 2));
    faults->writes = false;
    usleep(1'100'000);  // past the write-back retry delay
    CHECK(read_bytes(*s, region, 2 * kPage, 8, &status) == Bytes(8, 0));  // its sync succeeds too
    CHECK_EQ(status, PD3_OK);
    st = s->stats();
    CHECK(st.tier.writebacks >= 2);
    CHECK_EQ(st.tier.dirty_pages, 0u);
  }
  auto s = open_store(tiered(dir.path, 2, SyncMode::kNone));
  CHECK(read_bytes(*s, region, 0, kPage) == Bytes(kPage, 1));
  CHECK(read_bytes(*s, region, kPage, kPage) == Bytes(kPage, 2));
}

// The frame-end write-through writes the bytes written, not whole pages: one write op through the
// I/O backend per page, covering the page's dirty range.
TEST(tier_store_small_write_writes_only_its_bytes) {
  for (const SyncMode sync : {SyncMode::kNone, SyncMode::kBatch}) {
    TempDir dir("tier");
    auto faults = std::make_shared<Faults>();
    uint32_t region = 0;
    {
      auto s = open_store(faulty(dir.path, 4, sync, faults));
      region = must_allocate(*s, 8 * kPage);
      const uint64_t bytes0 = s->stats().tier.writeback_bytes, ops0 = faults->write_ops.load();
      REQUIRE(write_bytes(*s, region, kPage + 100, Bytes(64, 7)) == PD3_OK);
      CHECK_EQ(s->stats().tier.writeback_bytes - bytes0, 64u);
      CHECK_EQ(faults->write_ops.load() - ops0, 1u);
      CHECK_EQ(s->stats().tier.dirty_pages, 0u);
      // Two writes into one page in one frame: one write op over the range covering both.
      tier::Pins pins;
      Bytes out;
      pd3::FrameBuilder fb(&out);
      const Bytes a(10, 8), b(10, 9);
      for (const auto& [off, data] : {std::pair{2 * kPage, &a}, std::pair{2 * kPage + 200, &b}}) {
        const TransportRequest w = request(PD3_OP_WRITE, region, off, 10, data->data(), 10);
        REQUIRE(prepare_until_ready(*s, w, &pins) == tier::kReady);
        s->execute(w, {}, &fb);
        s->release(&pins);
      }
      const uint64_t bytes1 = s->stats().tier.writeback_bytes, ops1 = faults->write_ops.load();
      REQUIRE(s->sync() == PD3_OK);
      CHECK_EQ(s->stats().tier.writeback_bytes - bytes1, 210u);
      CHECK_EQ(faults->write_ops.load() - ops1, 1u);
      CHECK_EQ(faults->write_bytes.load(), s->stats().tier.writeback_bytes);
    }
    auto s = open_store(tiered(dir.path, 4, sync));
    Bytes page1(kPage, 0);
    std::fill(page1.begin() + 100, page1.begin() + 164, uint8_t(7));
    CHECK(read_bytes(*s, region, kPage, kPage) == page1);
    Bytes page2(kPage, 0);
    std::fill(page2.begin(), page2.begin() + 10, uint8_t(8));
    std::fill(page2.begin() + 200, page2.begin() + 210, uint8_t(9));
    CHECK(read_bytes(*s, region, 2 * kPage, kPage) == page2);
  }
}

TEST(tier_store_next_n_prefetch_reads_ahead_and_counts_useless_ones) {
  TempDir dir("tier");
  MemStoreOptions o = tiered(dir.path, 8);
  o.tier_prefetch = tier::PrefetchKind::kNextN;  // four pages after a miss
  auto s = open_store(o);
  const uint32_t region = must_allocate(*s, 64 * kPage);
  for (uint32_t p = 0; p < 64; ++p) REQUIRE(write_bytes(*s, region, p * kPage, Bytes(8, uint8_t(p))) == PD3_OK);
  // Start over with an empty tier: the reads below are the only accesses.
  s.reset();
  s = open_store(o);
  // A sequential scan: after the first miss, the pages ahead are read before they are asked for.
  for (uint32_t p = 0; p < 32; ++p) {
    CHECK(read_bytes(*s, region, p * kPage, 8) == Bytes(8, uint8_t(p)));
    for (int i = 0; i < 5; ++i) wait_io(*s, 5);  // let read-ahead land
  }
  pd3::MemStoreStats st = s->stats();
  CHECK(st.tier.prefetches >= 16);
  CHECK(st.tier.misses < 16);  // most of the 32 pages came in ahead of their read
  CHECK(st.tier.hits >= 16);
  CHECK(st.tier.resident_pages <= 8);
  // Far jumps: the pages read ahead of each are never used and get evicted.
  const uint64_t useless = st.tier.useless_prefetches;
  for (uint32_t p = 40; p < 64; p += 6) {
    read_bytes(*s, region, p * kPage, 8);
    for (int i = 0; i < 5; ++i) wait_io(*s, 5);
  }
  st = s->stats();
  CHECK(st.tier.useless_prefetches > useless);
  CHECK_EQ(st.tier.io_errors, 0u);
}

using pd3test::vm_locked_kib;

// The frames register through MRRC while they hold a page: with a cache of four frames for a pool
// of eight, four fills register (misses), four are refused (the cache is full of frames in use),
// refilling an evicted frame finds it still registered (hits), frames emptied for good are evicted
// from the cache when other frames need the room, and mlock really pins them (VmLck).
TEST(tier_store_frames_register_through_mrrc) {
  TempDir dir("tier");
  const long lck0 = vm_locked_kib();
  REQUIRE(lck0 >= 0);
  {
    MemStoreOptions o = tiered(dir.path, 8, SyncMode::kNone);
    o.mr_cache = 4 * kPage;
    auto s = open_store(o);
    const uint32_t r1 = must_allocate(*s, 16 * kPage);
    for (uint32_t p = 0; p < 8; ++p) read_bytes(*s, r1, p * kPage, 8);
    tier::TierStats t = s->stats().tier;
    CHECK(t.registering);
    CHECK_EQ(t.mr_misses, 4u);
    CHECK_EQ(t.mr_failures, 4u);
    CHECK_EQ(t.mr_hits, 0u);
    CHECK_EQ(t.mr_pinned_bytes, 4u * kPage);
    if (pd3test::kMlockPins) CHECK_EQ(vm_locked_kib() - lck0, long(4 * kPage / 1024));
    CHECK(!s->take_tier_notices().empty());  // the first refusal is logged
    CHECK(s->take_tier_notices().empty());   // once
    // LRU evicts pages 0..3 (frames 0..3, registered) for pages 8..11: each refill is a hit.
    for (uint32_t p = 8; p < 12; ++p) read_bytes(*s, r1, p * kPage, 8);
    t = s->stats().tier;
    CHECK_EQ(t.mr_hits, 4u);
    CHECK_EQ(t.mr_misses, 4u);
    CHECK_EQ(t.mr_failures, 4u);
  }
  CHECK_EQ(vm_locked_kib(), lck0);  // the store deregistered everything
  {
    MemStoreOptions o = tiered(dir.path, 8, SyncMode::kNone);
    o.mr_cache = 4 * kPage;
    auto s = open_store(o);
    const uint32_t r1 = must_allocate(*s, 16 * kPage);
    for (uint32_t p = 0; p < 8; ++p) read_bytes(*s, r1, p * kPage, 8);  // frames 0..3 registered
    // Freeing the region empties every frame; the cache keeps the four registered (unused).
    REQUIRE(run(*s, request(PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, r1, 0)).status == PD3_OK);
    tier::TierStats t = s->stats().tier;
    CHECK_EQ(t.resident_pages, 0u);
    CHECK_EQ(t.mr_pinned_bytes, 4u * kPage);
    CHECK_EQ(t.mr_deregistrations, 0u);
    // The next pages land in frames 7..4 (the free list's order), never registered: their
    // registrations evict the cached, unused ones of frames 0..3.
    const uint32_t r2 = must_allocate(*s, 16 * kPage);
    for (uint32_t p = 0; p < 4; ++p) read_bytes(*s, r2, p * kPage, 8);
    t = s->stats().tier;
    CHECK(t.mr_deregistrations > 0);
    CHECK_EQ(t.mr_misses, 8u);
    CHECK_EQ(t.mr_failures, 4u);
    CHECK_EQ(t.mr_pinned_bytes, 4u * kPage);
    if (pd3test::kMlockPins) CHECK_EQ(vm_locked_kib() - lck0, long(t.mr_pinned_bytes / 1024));
  }
  CHECK_EQ(vm_locked_kib(), lck0);  // the store deregistered everything
  // 0 turns registration off; the default is the DRAM budget (every frame registered).
  MemStoreOptions off = tiered(dir.path, 4, SyncMode::kNone);
  off.mr_cache = 0;
  {
    auto s = open_store(off);
    const uint32_t r = must_allocate(*s, 8 * kPage);
    read_bytes(*s, r, 0, 8);
    CHECK(!s->stats().tier.registering);
    CHECK_EQ(vm_locked_kib(), lck0);
  }
  {
    auto s = open_store(tiered(dir.path, 4, SyncMode::kNone));
    const uint32_t r = must_allocate(*s, 8 * kPage);
    for (uint32_t p = 0; p < 6; ++p) read_bytes(*s, r, p * kPage, 8);
    const tier::TierStats t = s->stats().tier;
    CHECK_EQ(t.mr_misses, 4u);
    CHECK_EQ(t.mr_hits, 2u);
    CHECK_EQ(t.mr_failures, 0u);
    CHECK_EQ(t.mr_pinned_bytes, 4u * kPage);
  }
}

// Two connections' frames: the first frame's end takes every listed page into its batch, including
// one the second frame wrote; the second frame, ending with nothing listed, must still wait for that
// batch (it is not answered before its write reached the file).
TEST(tier_store_frame_with_nothing_listed_waits_for_the_batch_in_flight) {
  for (const SyncMode sync : {SyncMode::kNone, SyncMode::kBatch}) {
    TempDir dir("tier");
    auto slow = std::make_shared<std::atomic<bool>>(false);
    MemStoreOptions o = tiered(dir.path, 4, sync);
    o.tier_io_factory = [slow](std::unique_ptr<tier::TierIo>* out) {
      return tier::make_thread_io(2, [slow](const tier::IoOp& op) {
        // Relaxed: a switch, flipped by the test between requests.
        if (op.kind == tier::IoOp::Kind::kWrite && slow->load(std::memory_order_relaxed)) usleep(200'000);
        return 0;
      }, out);
    };
    auto s = open_store(o);
    const uint32_t region = must_allocate(*s, 8 * kPage);
    slow->store(true);
    tier::Pins pins;
    Bytes out;
    pd3::FrameBuilder fb(&out);
    const Bytes b(16, 5);
    const TransportRequest w = request(PD3_OP_WRITE, region, 3 * kPage, 16, b.data(), 16);
    REQUIRE(prepare_until_ready(*s, w, &pins) == tier::kReady);
    s->execute(w, {}, &fb);  // the second connection's write, its frame not ended yet
    s->release(&pins);
    uint64_t first = 0, second = 0;
    // The first connection's frame, which touched nothing, ends: its sync takes the page into a
    // batch, though the frame itself need not wait for it.
    REQUIRE(s->begin_sync(tier::Touched{}, &first) == PD3_OK);
    CHECK_EQ(first, 0u);
    CHECK(s->stats().tier.dirty_pages == 1);  // its write is in flight
    REQUIRE(s->begin_sync(pins.touched, &second) == PD3_OK);  // the second's: nothing listed, the batch in flight
    CHECK(second != 0);
    CHECK_EQ(s->sync_status(second), tier::kWait);
    int status = tier::kWait;
    for (int i = 0; i < 50 && (status = s->sync_status(second)) == tier::kWait; ++i) wait_io(*s, 100);
    CHECK_EQ(status, tier::kReady);
    CHECK_EQ(s->stats().tier.dirty_pages, 0u);
    // Nothing in flight and nothing listed: a frame is answered at once.
    uint64_t third = 1;
    REQUIRE(s->begin_sync(tier::Touched::everything(), &third) == PD3_OK);
    CHECK_EQ(third, 0u);
  }
}

namespace {

// Runs `req` as a frame of its own and starts the frame's sync as the event loop does (never waiting
// for the disk); returns the begin_sync status and sets *ticket (and *reply).
int run_and_begin_sync(MemStore& s, const TransportRequest& req, uint64_t* ticket, Reply* reply = nullptr) {
  tier::Pins pins;
  REQUIRE(prepare_until_ready(s, req, &pins) == tier::kReady);
  Bytes out;
  pd3::FrameBuilder fb(&out);
  s.execute(req, {}, &fb);
  s.release(&pins);
  if (reply != nullptr) {
    pd3::TransportResponse r;
    REQUIRE(pd3::decode_response(out.data(), out.size(), &r) == PD3_OK);
    *reply = pd3test::store_reply(r);
  }
  return s.begin_sync(pins.touched, ticket);
}

// The same for a write of `bytes` at `offset`.
int write_and_begin_sync(MemStore& s, uint32_t region, uint32_t offset, const Bytes& bytes, uint64_t* ticket) {
  return run_and_begin_sync(
      s, request(PD3_OP_WRITE, region, offset, uint32_t(bytes.size()), bytes.data(), uint32_t(bytes.size())), ticket);
}

// A tiered store of 4 frames under --sync batch whose fdatasyncs wait while `gate` is held (four
// I/O threads, so reads go on meanwhile).
MemStoreOptions sync_gated(const std::string& dir, const std::shared_ptr<pd3test::Gate>& gate) {
  MemStoreOptions o = tiered(dir, 4, SyncMode::kBatch);
  o.tier_io_factory = [gate](std::unique_ptr<tier::TierIo>* out) {
    return tier::make_thread_io(4, [gate](const tier::IoOp& op) {
      if (op.kind == tier::IoOp::Kind::kSync) gate->pass();
      return 0;
    }, out);
  };
  return o;
}

// Waits for the sync of `ticket` as the event loop does; returns its final status.
int wait_sync(MemStore& s, uint64_t ticket) {
  int status = tier::kWait;
  for (int i = 0; i < 1000 && ticket != 0 && (status = s.sync_status(ticket)) == tier::kWait; ++i) wait_io(s);
  return ticket == 0 ? int(tier::kReady) : status;
}

}  // namespace

// Under --sync batch with a tier, the key index's changes are made durable by an fdatasync in the
// tier's group commit, never by an msync on the loop thread; a frame is acknowledged only once that
// fdatasync succeeded, and a failed one is tried again with the next batch.
TEST(tier_store_index_changes_join_the_group_commit) {
  TempDir dir("tier");
  auto faults = std::make_shared<Faults>();
  uint32_t region = 0;
  {
    auto s = open_store(faulty(dir.path, 2, SyncMode::kBatch, faults));
    region = must_allocate(*s, 8 * kPage);
    const uint64_t msyncs0 = s->stats().syncs;
    uint64_t ticket = 0;
    REQUIRE(write_and_begin_sync(*s, region, 0, kv_record("k1", "one"), &ticket) == PD3_OK);
    CHECK(ticket != 0);  // the batch is in flight: the call did not wait for the disk
    CHECK_EQ(wait_sync(*s, ticket), tier::kReady);
    CHECK_EQ(faults->index_fdatasyncs.load(), 1u);
    CHECK(faults->region_fdatasyncs.load() >= 1);
    CHECK_EQ(s->stats().syncs, msyncs0);  // no msync of the index
    CHECK_EQ(s->stats().tier.fdatasyncs, faults->index_fdatasyncs.load() + faults->region_fdatasyncs.load());

    // A write that changes no index entry (no record at its offset is new) still syncs its page, but
    // the index file is not synced again.
    REQUIRE(write_and_begin_sync(*s, region, 2 * kPage, Bytes(16, 0), &ticket) == PD3_OK);
    CHECK_EQ(wait_sync(*s, ticket), tier::kReady);
    CHECK_EQ(faults->index_fdatasyncs.load(), 1u);

    // The index's fdatasync fails: the frame is not acknowledged.
    faults->index_syncs = true;
    REQUIRE(write_and_begin_sync(*s, region, kPage, kv_record("k2", "two"), &ticket) == PD3_OK);
    CHECK(ticket != 0);
    const int failed = wait_sync(*s, ticket);
    CHECK(failed != tier::kReady && failed != tier::kWait);
    CHECK(!s->take_io_errors().empty());
    // The next batch (even one with no writes of its own) syncs the index file again.
    faults->index_syncs = false;
    REQUIRE(s->begin_sync(tier::Touched::everything(), &ticket) == PD3_OK);
    CHECK_EQ(wait_sync(*s, ticket), tier::kReady);
    CHECK_EQ(faults->index_fdatasyncs.load(), 2u);
    CHECK_EQ(s->stats().syncs, msyncs0);
  }
  // Both keys are in the index after a restart.
  auto s = open_store(tiered(dir.path, 2));
  for (const auto& [key, value] : {std::pair{"k1", "one"}, std::pair{"k2", "two"}}) {
    const Reply r = run(*s, request(PD3_OP_PREFETCH, 0, 0, 4096, key, 2));
    CHECK_EQ(r.status, PD3_OK);
    CHECK(r.data == Bytes(value, value + 3));
  }
}

namespace {

// One request of a connection as the event loop runs it: prepare until ready, then execute and
// release (the store's sync after it), or give up while parked (a connection closed).
struct Parked {
  TransportRequest req;
  Bytes data;  // a write's bytes (req.data points here)
  tier::Pins pins;
};

Reply execute_ready(MemStore& s, Parked& p) { return finish(s, p.req, tier::kReady, &p.pins); }

}  // namespace

// A frame that only reads waits for no batch but the one holding bytes it read: a read of another
// page is answered while a write's fdatasync is held; a read of the written page waits for that
// batch, also once the page was evicted after its write and read back from the file.
TEST(tier_store_read_waits_only_for_the_batch_holding_its_bytes) {
  TempDir dir("tier");
  auto gate = std::make_shared<pd3test::Gate>();
  auto s = open_store(sync_gated(dir.path, gate));
  const uint32_t region = must_allocate(*s, 8 * kPage);
  const auto held = gate->hold();
  const Bytes bytes(16, 0);  // padding to the record parser: no index entry changes
  uint64_t written = 0, other = 1, same = 0, again = 0;
  REQUIRE(write_and_begin_sync(*s, region, 3 * kPage + 64, bytes, &written) == PD3_OK);
  REQUIRE(written != 0);
  CHECK_EQ(s->sync_status(written), tier::kWait);
  REQUIRE(run_and_begin_sync(*s, request(PD3_OP_READ, region, 6 * kPage, 64), &other) == PD3_OK);
  CHECK_EQ(other, 0u);  // page 6 holds nothing the held batch writes
  REQUIRE(run_and_begin_sync(*s, request(PD3_OP_READ, region, 3 * kPage, 128), &same) == PD3_OK);
  CHECK_EQ(same, written);
  // The page's write completes (only the fdatasync is held); reads of four other pages evict it.
  for (int i = 0; i < 100 && s->stats().tier.dirty_pages != 0; ++i) wait_io(*s, 10);
  REQUIRE(s->stats().tier.dirty_pages == 0);
  const uint64_t evictions = s->stats().tier.evictions;
  for (const uint32_t p : {0u, 1u, 2u, 4u, 5u}) {
    uint64_t t = 1;
    REQUIRE(run_and_begin_sync(*s, request(PD3_OP_READ, region, p * kPage, 8), &t) == PD3_OK);
    CHECK_EQ(t, 0u);
  }
  REQUIRE(s->stats().tier.evictions >= evictions + 2);
  const uint64_t misses = s->stats().tier.misses;
  Reply reply;
  REQUIRE(run_and_begin_sync(*s, request(PD3_OP_READ, region, 3 * kPage + 64, 16), &again, &reply) == PD3_OK);
  REQUIRE(s->stats().tier.misses == misses + 1);  // read back from its file
  CHECK(reply.status == PD3_OK && reply.data == bytes);
  CHECK_EQ(again, written);  // not durable until the held fdatasync completes
  gate->release();
  CHECK_EQ(wait_sync(*s, written), tier::kReady);
  CHECK_EQ(s->sync_status(again), tier::kReady);
}

// A page written by a frame still running (parked), evicted (written back, not yet synced) and
// read back by another frame before any frame end: that reader waits for the batch its own end
// gathers, which fdatasyncs the page's file.
TEST(tier_store_read_back_of_a_page_evicted_while_listed_waits_for_the_next_batch) {
  TempDir dir("tier");
  auto gate = std::make_shared<pd3test::Gate>();
  auto s = open_store(sync_gated(dir.path, gate));
  const uint32_t region = must_allocate(*s, 8 * kPage);
  const auto held = gate->hold();
  const Bytes bytes(16, 0);
  tier::Pins writer, reader;
  Bytes out;
  pd3::FrameBuilder fb(&out);
  const TransportRequest w = request(PD3_OP_WRITE, region, 3 * kPage, 16, bytes.data(), 16);
  REQUIRE(prepare_until_ready(*s, w, &writer) == tier::kReady);
  s->execute(w, {}, &fb);
  s->release(&writer);  // the writer's frame goes on (parked on a later record): no frame end
  const uint64_t misses = s->stats().tier.misses;
  for (const uint32_t p : {0u, 1u, 2u, 4u, 5u, 6u}) {  // the reader's frame: enough pages to evict page 3
    const TransportRequest r = request(PD3_OP_READ, region, p * kPage, 8);
    REQUIRE(prepare_until_ready(*s, r, &reader) == tier::kReady);
    s->execute(r, {}, &fb);
    s->release(&reader);
  }
  CHECK(!reader.touched.listed);  // so far it read nothing written
  const TransportRequest back = request(PD3_OP_READ, region, 3 * kPage, 16);
  REQUIRE(prepare_until_ready(*s, back, &reader) == tier::kReady);
  s->execute(back, {}, &fb);
  s->release(&reader);
  REQUIRE(s->stats().tier.misses == misses + 7);  // page 3 was read back from its file
  CHECK(reader.touched.listed);
  uint64_t ticket = 0;
  REQUIRE(s->begin_sync(reader.touched, &ticket) == PD3_OK);
  CHECK(ticket != 0);
  CHECK_EQ(s->sync_status(ticket), tier::kWait);
  gate->release();
  CHECK_EQ(wait_sync(*s, ticket), tier::kReady);
}

// A write covering a page whole takes a frame without reading the page; a partial one still reads
// it; a write over one whole page and part of another does one of each.
TEST(tier_store_whole_page_write_reads_nothing) {
  TempDir dir("tier");
  auto faults = std::make_shared<Faults>();
  uint32_t region = 0;
  {
    auto s = open_store(faulty(dir.path, 3, SyncMode::kBatch, faults));
    region = must_allocate(*s, 8 * kPage);
    const uint64_t reads0 = faults->read_ops.load();
    REQUIRE(write_bytes(*s, region, 2 * kPage, Bytes(kPage, 7)) == PD3_OK);
    CHECK_EQ(faults->read_ops.load(), reads0);
    CHECK_EQ(s->stats().tier.overwrites, 1u);
    CHECK_EQ(s->stats().tier.misses, 0u);
    REQUIRE(write_bytes(*s, region, 3 * kPage + 1, Bytes(kPage - 1, 8)) == PD3_OK);  // misses byte 0
    CHECK_EQ(faults->read_ops.load(), reads0 + 1);
    CHECK_EQ(s->stats().tier.misses, 1u);
    REQUIRE(write_bytes(*s, region, 5 * kPage, Bytes(kPage + 10, 9)) == PD3_OK);  // page 5 whole, 6 in part
    CHECK_EQ(faults->read_ops.load(), reads0 + 2);
    CHECK_EQ(s->stats().tier.overwrites, 2u);
    CHECK(read_bytes(*s, region, 2 * kPage, kPage) == Bytes(kPage, 7));
  }
  // On file after a restart (the tier starts empty).
  auto s = open_store(tiered(dir.path, 3));
  CHECK(read_bytes(*s, region, 2 * kPage, kPage) == Bytes(kPage, 7));
  Bytes page3(kPage, 8);
  page3[0] = 0;
  CHECK(read_bytes(*s, region, 3 * kPage, kPage) == page3);
  CHECK(read_bytes(*s, region, 5 * kPage, kPage) == Bytes(kPage, 9));
  Bytes page6(kPage, 0);
  std::fill(page6.begin(), page6.begin() + 10, uint8_t(9));
  CHECK(read_bytes(*s, region, 6 * kPage, kPage) == page6);
}

// Other requests wait for a claimed page until its writer has written it; a writer that gives up
// (refused, or its connection closed) leaves no frame behind, and the page reads as on file.
TEST(tier_store_claimed_page_waits_for_its_writer) {
  TempDir dir("tier");
  auto s = open_store(tiered(dir.path, 4));
  const uint32_t region = must_allocate(*s, 16 * kPage);
  for (uint32_t p = 0; p < 4; ++p) REQUIRE(write_bytes(*s, region, p * kPage, Bytes(kPage, uint8_t(p + 1))) == PD3_OK);
  const auto evict_all = [&] { for (uint32_t p = 8; p < 12; ++p) read_bytes(*s, region, p * kPage, 8); };
  const auto prepare = [&](Parked& p) { return s->prepare(p.req, {}, &p.pins); };
  const auto writer = [&](uint32_t off, uint32_t len, uint8_t fill) {
    auto p = std::make_unique<Parked>();
    p->data.assign(len, fill);
    p->req = request(PD3_OP_WRITE, region, off, len, p->data.data(), len);
    return p;
  };
  const auto reader = [&](uint32_t off, uint32_t len) {
    auto p = std::make_unique<Parked>();
    p->req = request(PD3_OP_READ, region, off, len);
    return p;
  };
  for (const bool gives_up : {false, true}) {
    evict_all();
    // W writes page 0 whole (claimed at once) and the first bytes of page 1 (a read in flight).
    auto w = writer(0, kPage + 8, gives_up ? 0xee : 0x55);
    CHECK_EQ(prepare(*w), tier::kWait);
    auto r = reader(kPage / 2, 16);  // inside the claimed page
    CHECK_EQ(prepare(*r), tier::kWait);
    for (int i = 0; i < 20; ++i) {
      wait_io(*s, 10);  // page 1's read completes: W could run, R still may not
      CHECK_EQ(prepare(*r), tier::kWait);
    }
    if (!gives_up) {
      REQUIRE(prepare(*w) == tier::kReady);
      CHECK_EQ(execute_ready(*s, *w).status, PD3_OK);
    } else {
      s->release(&w->pins);  // its connection closed while it was parked
    }
    REQUIRE(prepare_until_ready(*s, r->req, &r->pins) == tier::kReady);
    // The first round's write, on file since: the one given up left nothing.
    CHECK(execute_ready(*s, *r).data == Bytes(16, 0x55));
  }
  // Refused after the claim (the region is frozen for a move): nothing of it lands, and the page is
  // not left in a frame (reading it is a miss).
  evict_all();
  CHECK_EQ(run(*s, request(PD3_OP_CONTROL, PD3_CTL_FREEZE, region, 0)).status, PD3_OK);
  const uint64_t overwrites = s->stats().tier.overwrites;
  CHECK_EQ(write_bytes(*s, region, 3 * kPage, Bytes(kPage, 0xdd)), PD3_E_MOVED);
  CHECK_EQ(s->stats().tier.overwrites, overwrites + 1);  // it did claim a frame
  CHECK_EQ(run(*s, request(PD3_OP_CONTROL, PD3_CTL_THAW, region, 0)).status, PD3_OK);
  const uint64_t misses = s->stats().tier.misses;
  CHECK(read_bytes(*s, region, 3 * kPage, kPage) == Bytes(kPage, 4));
  CHECK_EQ(s->stats().tier.misses, misses + 1);
}

// Several requests in flight at once, as connections park and resume: random reads, writes (a third
// of them over a whole page, most of those with a few bytes of a page on either side, so that they
// park with the page claimed while those are read), and writers that give up while parked, checked
// against a byte model when each runs; then the files are compared after a reopen.
TEST(tier_store_interleaved_requests_match_a_model) {
  TempDir dir("tier");
  constexpr uint32_t kPages = 12, kRegion = kPages * kPage, kSlots = 3;
  Bytes model(kRegion, 0);
  uint32_t region = 0;
  Rng rng(77);
  uint64_t ran = 0, abandoned = 0, waited = 0;
  {
    auto s = open_store(tiered(dir.path, 4, SyncMode::kNone));
    region = must_allocate(*s, kRegion);
    std::unique_ptr<Parked> slots[kSlots];
    const uint32_t rounds = 3000 * pd3test::stress_scale();
    for (uint32_t i = 0; i < rounds; ++i) {
      auto& slot = slots[i % kSlots];
      if (!slot) {
        slot = std::make_unique<Parked>();
        const uint32_t kind = rng.below(3);
        uint32_t len = 1 + rng.below(kPage), off = rng.below(kRegion - len + 1);
        if (kind == 0) {
          const uint32_t before = rng.below(3) == 0 ? 0 : 1 + rng.below(100);
          const uint32_t after = rng.below(3) == 0 ? 0 : 1 + rng.below(100);
          off = (1 + rng.below(kPages - 2)) * kPage - before;
          len = before + kPage + after;
        }
        if (kind == 2) {
          slot->req = request(PD3_OP_READ, region, off, len);
        } else {
          slot->data.resize(len);
          for (auto& x : slot->data) x = uint8_t(rng.next());
          slot->req = request(PD3_OP_WRITE, region, off, len, slot->data.data(), len);
        }
      }
      const int ready = s->prepare(slot->req, {}, &slot->pins);
      REQUIRE(ready == tier::kReady || ready == tier::kWait);
      if (ready == tier::kWait) {
        ++waited;
        if (slot->req.op() == PD3_OP_WRITE && rng.below(16) == 0) {  // its connection closes
          s->release(&slot->pins);
          slot.reset();
          ++abandoned;
        } else if (rng.below(4) == 0) {
          wait_io(*s, 5);
        } else {
          s->on_io();
        }
        continue;
      }
      const Reply r = execute_ready(*s, *slot);
      REQUIRE(r.status == PD3_OK);
      const TransportRequest& q = slot->req;
      if (q.op() == PD3_OP_WRITE) {
        std::memcpy(model.data() + q.offset, slot->data.data(), q.size);
      } else {
        REQUIRE(r.data.size() == q.size);
        REQUIRE(std::memcmp(r.data.data(), model.data() + q.offset, q.size) == 0);
      }
      ++ran;
      slot.reset();
    }
    for (auto& slot : slots)
      if (slot) s->release(&slot->pins);
    const pd3::MemStoreStats st = s->stats();
    CHECK(st.tier.overwrites > 0);
    CHECK(st.tier.misses > 0);
    CHECK_EQ(st.tier.io_errors, 0u);
    REQUIRE(s->sync() == PD3_OK);
  }
  CHECK(ran > 1000);
  CHECK(abandoned > 0);
  CHECK(waited > 0);
  auto s = open_store(tiered(dir.path, 2));
  for (uint32_t off = 0; off < kRegion; off += kPage)
    CHECK(read_bytes(*s, region, off, kPage) == Bytes(model.begin() + off, model.begin() + off + kPage));
}
