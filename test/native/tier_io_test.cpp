// tier_io_test.cpp — the SSD tier's I/O backends (io_uring through raw syscalls, and the pread/
// pwrite thread pool): many page writes and reads in flight at once land byte-exact, short
// transfers past the end of a file are errors, and the fault hook fails exactly the ops it picks.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "harness.hpp"
#include "memserver/tier/tier_io.hpp"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3::tier::IoCompletion;
using pd3::tier::IoOp;
using pd3::tier::TierIo;
using pd3test::Rng;

constexpr uint32_t kPage = 4096;

// A temporary file of `pages` zero pages, removed at scope exit.
struct TempFile {
  std::string path;
  pd3::UniqueFd fd;
  explicit TempFile(uint32_t pages) {
    char tmpl[] = "/tmp/pd3-tier-io-XXXXXX";
    fd = pd3::UniqueFd(mkstemp(tmpl));
    path = tmpl;
    if (fd.valid() && ftruncate(fd.get(), off_t(pages) * kPage) != 0) fd.reset();
  }
  ~TempFile() { unlink(path.c_str()); }
};

// Waits until `n` completions were reaped (2 s at most each wait), keyed by tag.
std::map<uint64_t, int64_t> collect(TierIo& io, size_t n) {
  std::map<uint64_t, int64_t> out;
  std::vector<IoCompletion> got;
  while (out.size() < n) {
    pollfd p{io.completion_fd(), POLLIN, 0};
    if (poll(&p, 1, 2000) <= 0) break;
    got.clear();
    io.reap(&got);
    for (const IoCompletion& c : got) out[c.tag] = c.result;
  }
  return out;
}

// Writes 64 distinct pages at once, reads them back at once, and checks every byte; then a read
// past the end of the file.
void round_trip(TierIo& io) {
  constexpr uint32_t kPages = 64;
  TempFile file(kPages);
  REQUIRE(file.fd.valid());
  std::vector<uint8_t> out(size_t(kPages) * kPage), in(size_t(kPages) * kPage, 0);
  Rng rng(7);
  for (auto& b : out) b = uint8_t(rng.next());
  for (uint32_t p = 0; p < kPages; ++p) {
    IoOp op{IoOp::Kind::kWrite, file.fd.get(), out.data() + size_t(p) * kPage, kPage, uint64_t(p) * kPage, p};
    REQUIRE(io.submit(op) == PD3_OK);
  }
  auto done = collect(io, kPages);
  REQUIRE(done.size() == kPages);
  for (const auto& [tag, result] : done) CHECK_EQ(result, int64_t(kPage));
  for (uint32_t p = 0; p < kPages; ++p) {
    // In reverse order, to mix the offsets the backend sees.
    const uint32_t q = kPages - 1 - p;
    IoOp op{IoOp::Kind::kRead, file.fd.get(), in.data() + size_t(q) * kPage, kPage, uint64_t(q) * kPage, 100 + q};
    REQUIRE(io.submit(op) == PD3_OK);
  }
  done = collect(io, kPages);
  REQUIRE(done.size() == kPages);
  for (const auto& [tag, result] : done) CHECK_EQ(result, int64_t(kPage));
  CHECK(in == out);
  // Half a page past the end: the file is shorter than the page, which the tier must treat as an error.
  REQUIRE(ftruncate(file.fd.get(), off_t(kPages) * kPage - kPage / 2) == 0);
  IoOp past{IoOp::Kind::kRead, file.fd.get(), in.data(), kPage, uint64_t(kPages - 1) * kPage, 999};
  REQUIRE(io.submit(past) == PD3_OK);
  done = collect(io, 1);
  REQUIRE(done.count(999) == 1);
  CHECK_EQ(done[999], int64_t(-EIO));
}

}  // namespace

TEST(tier_io_threads_round_trip) {
  std::unique_ptr<TierIo> io;
  REQUIRE(pd3::tier::make_thread_io(3, nullptr, &io) == PD3_OK);
  round_trip(*io);
}

TEST(tier_io_uring_round_trip) {
  std::unique_ptr<TierIo> io;
  const int rc = pd3::tier::make_uring_io(16, &io);  // fewer slots than ops: the backlog is used
  if (rc == PD3_E_UNAVAILABLE) {
    std::printf("  skipped: %s\n", pd3_last_error());
    return;
  }
  REQUIRE(rc == PD3_OK);
  round_trip(*io);
}

TEST(tier_io_bad_input) {
  std::unique_ptr<TierIo> io;
  CHECK(pd3::tier::make_thread_io(0, nullptr, &io) == PD3_E_INVAL);
  CHECK(pd3::tier::make_uring_io(0, &io) == PD3_E_INVAL);
  CHECK(pd3::tier::make_uring_io(24, &io) == PD3_E_INVAL);
  pd3::tier::IoKind k;
  CHECK(pd3::tier::parse_io_kind("uring", &k) && k == pd3::tier::IoKind::kUring);
  CHECK(pd3::tier::parse_io_kind("threads", &k) && k == pd3::tier::IoKind::kThreads);
  CHECK(!pd3::tier::parse_io_kind("Uring", &k));
  CHECK(!pd3::tier::parse_io_kind("", &k));
  // A closed descriptor: the error comes back as a completion, not a crash.
  REQUIRE(pd3::tier::make_thread_io(1, nullptr, &io) == PD3_OK);
  uint8_t buf[kPage];
  REQUIRE(io->submit(IoOp{IoOp::Kind::kRead, 1 << 20, buf, kPage, 0, 5}) == PD3_OK);
  auto done = collect(*io, 1);
  REQUIRE(done.count(5) == 1);
  CHECK_EQ(done[5], int64_t(-EBADF));
}

TEST(tier_io_fault_hook_fails_only_picked_ops) {
  TempFile file(8);
  REQUIRE(file.fd.valid());
  std::unique_ptr<TierIo> io;
  auto fault = [](const IoOp& op) { return op.kind == IoOp::Kind::kWrite && op.offset == 3 * kPage ? -ENOSPC : 0; };
  REQUIRE(pd3::tier::make_thread_io(2, fault, &io) == PD3_OK);
  std::vector<uint8_t> page(kPage, 0xAB);
  for (uint32_t p = 0; p < 8; ++p)
    REQUIRE(io->submit(IoOp{IoOp::Kind::kWrite, file.fd.get(), page.data(), kPage, uint64_t(p) * kPage, p}) == PD3_OK);
  auto done = collect(*io, 8);
  REQUIRE(done.size() == 8);
  for (const auto& [tag, result] : done) CHECK_EQ(result, tag == 3 ? int64_t(-ENOSPC) : int64_t(kPage));
  uint8_t first = 0;
  CHECK(pread(file.fd.get(), &first, 1, 3 * kPage) == 1 && first == 0);  // the failed write left no byte
  CHECK(pread(file.fd.get(), &first, 1, 4 * kPage) == 1 && first == 0xAB);
}

namespace {

// Thousands of reads and writes with up to 48 in flight over 32 pages, never two at once on the
// same page (the tier's rule: one op per frame): every read sees the last write of its page.
void stress(TierIo& io, uint64_t seed) {
  constexpr uint32_t kPages = 32, kSlots = 48;
  TempFile file(kPages);
  REQUIRE(file.fd.valid());
  std::vector<uint8_t> model(kPages, 0);          // the byte every page is filled with
  std::vector<int> busy(kPages, -1);              // slot using the page, or -1
  std::vector<std::vector<uint8_t>> bufs(kSlots, std::vector<uint8_t>(kPage));
  std::vector<uint32_t> slot_page(kSlots);
  std::vector<bool> slot_read(kSlots), slot_used(kSlots, false);
  Rng rng(seed);
  const uint32_t total = 4000 * pd3test::stress_scale();
  uint32_t started = 0, done = 0, in_flight = 0;
  std::vector<IoCompletion> got;
  while (done < total) {
    for (uint32_t s = 0; s < kSlots && started < total; ++s) {
      if (slot_used[s]) continue;
      const uint32_t page = rng.below(kPages);
      if (busy[page] >= 0) continue;
      const bool read = rng.below(2) == 0;
      if (!read) std::fill(bufs[s].begin(), bufs[s].end(), uint8_t(started % 255 + 1));
      IoOp op{read ? IoOp::Kind::kRead : IoOp::Kind::kWrite, file.fd.get(), bufs[s].data(), kPage, uint64_t(page) * kPage, s};
      REQUIRE(io.submit(op) == PD3_OK);
      if (!read) model[page] = uint8_t(started % 255 + 1);  // ops on a page never overlap: the order is the model's
      busy[page] = int(s);
      slot_page[s] = page;
      slot_read[s] = read;
      slot_used[s] = true;
      ++started;
      ++in_flight;
    }
    pollfd p{io.completion_fd(), POLLIN, 0};
    REQUIRE(poll(&p, 1, 2000) == 1);
    got.clear();
    io.reap(&got);
    for (const IoCompletion& c : got) {
      const uint32_t s = uint32_t(c.tag);
      REQUIRE(s < kSlots && slot_used[s]);
      CHECK_EQ(c.result, int64_t(kPage));
      if (slot_read[s]) CHECK(bufs[s] == std::vector<uint8_t>(kPage, model[slot_page[s]]));
      busy[slot_page[s]] = -1;
      slot_used[s] = false;
      --in_flight;
      ++done;
    }
  }
  CHECK_EQ(in_flight, 0u);
}

}  // namespace

TEST(tier_io_stress_threads) {
  std::unique_ptr<TierIo> io;
  REQUIRE(pd3::tier::make_thread_io(4, nullptr, &io) == PD3_OK);
  stress(*io, 11);
}

TEST(tier_io_stress_uring) {
  std::unique_ptr<TierIo> io;
  const int rc = pd3::tier::make_uring_io(32, &io);  // fewer slots than ops in flight
  if (rc == PD3_E_UNAVAILABLE) {
    std::printf("  skipped: %s\n", pd3_last_error());
    return;
  }
  REQUIRE(rc == PD3_OK);
  stress(*io, 12);
}
