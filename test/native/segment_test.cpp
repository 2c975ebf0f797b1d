// segment_test.cpp — shared segment creation, attach round trips, and refusal of every kind of bad segment.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/segment.hpp"
#include "dpu/agent_session.hpp"
#include "common/atomics.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

using pd3::Segment;

bool contains(const char* hay, const char* needle) { return std::strstr(hay, needle) != nullptr; }
bool last_error_has(const char* needle) { return contains(pd3_last_error(), needle); }

std::string shm_path(const std::string& name) { return "/dev/shm/" + name; }
bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : ~uint64_t{0};
}

// Removes a file at scope exit (segments the tests create or forge).
struct Unlinker {
  std::string path;
  ~Unlinker() { ::unlink(path.c_str()); }
};

// Writes `n` bytes at `off` of an existing file, as a foreign writer would (not through the mapping).
bool poke(const std::string& path, uint64_t off, const void* data, size_t n) {
  const int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) return false;
  const bool ok = ::pwrite(fd, data, n, off_t(off)) == ssize_t(n);
  ::close(fd);
  return ok;
}
template <class T>
bool poke_field(const std::string& path, size_t offset, T value) {
  return poke(path, offset, &value, sizeof value);
}
template <class T>
T peek_field(const std::string& path, size_t offset) {
  T v{};
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    if (::pread(fd, &v, sizeof v, off_t(offset)) != ssize_t(sizeof v)) v = T{};
    ::close(fd);
  }
  return v;
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size());
  ::close(fd);
  return ok;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

// A no-leftover check: Segment::create builds under a private temporary name first.
bool temp_file_left(const std::string& name) {
  return file_exists("/dev/shm/.pd3-tmp-" + std::to_string(getpid()) + "-" + name);
}

constexpr pd3_segment_sizes kSmall{8192, 16384, 65536, 32, 0};

// Attach through every entry point that validates; all must agree on the status.
void expect_refused(const std::string& name, int status, const char* mention) {
  std::unique_ptr<Segment> seg;
  CHECK_EQ(Segment::attach(name.c_str(), &seg), status);
  CHECK(seg == nullptr);
  CHECK(contains(pd3_last_error(), pd3_status_name(status)));
  if (!last_error_has(mention))
    std::fprintf(stderr, "  last error '%s' does not mention '%s'\n", pd3_last_error(), mention);
  CHECK(last_error_has(mention));

  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_attach(name.c_str(), &h), status);
  CHECK(h == nullptr);
  CHECK(last_error_has(mention));

  std::unique_ptr<pd3::AgentSession> agent;
  CHECK_EQ(pd3::AgentSession::attach(name.c_str(), &agent), status);
  CHECK(agent == nullptr);
  CHECK(last_error_has(mention));
}

}  // namespace

TEST(segment_create_attach_round_trip) {
  const std::string name = pd3test::unique_name("seg-rt");
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{shm_path(name)};
  CHECK(std::strlen(pd3_last_error()) == 0);
  CHECK(!temp_file_left(name));
  CHECK_EQ(file_size(shm_path(name)), seg->size());

  const pd3_control* c = seg->control();
  CHECK_EQ(c->magic, PD3_SEGMENT_MAGIC);
  CHECK_EQ(c->layout_version, PD3_LAYOUT_VERSION);
  CHECK_EQ(c->req_size, kSmall.request_ring_bytes);
  CHECK_EQ(c->resp_size, kSmall.response_ring_bytes);
  CHECK_EQ(c->lz_data_size, kSmall.lz_data_bytes);
  CHECK_EQ(c->lz_desc_count, kSmall.lz_items);
  CHECK_EQ(c->lz_bucket_count, 2 * kSmall.lz_items);
  CHECK_EQ(c->creator_pid, uint32_t(getpid()));
  CHECK_EQ(c->segment_size, seg->size());
  // Sections: in order, 4 KiB-aligned, non-overlapping, inside the segment.
  const uint64_t starts[] = {c->req_offset, c->resp_offset, c->lz_desc_offset, c->lz_bucket_offset,
                             c->lz_data_offset};
  const uint64_t lens[] = {c->req_size, c->resp_size, uint64_t(c->lz_desc_count) * sizeof(pd3_lz_desc),
                           uint64_t(c->lz_bucket_count) * 8, c->lz_data_size};
  uint64_t end = PD3_CONTROL_SIZE;
  for (int i = 0; i < 5; ++i) {
    CHECK_EQ(starts[i] % PD3_SECTION_ALIGN, 0u);
    CHECK(starts[i] >= end);
    end = starts[i] + lens[i];
  }
  CHECK(end <= c->segment_size);

  std::unique_ptr<Segment> other;
  REQUIRE(Segment::attach(name.c_str(), &other) == PD3_OK);
  const pd3_control* o = other->control();
  CHECK_EQ(other->size(), seg->size());
  CHECK(std::memcmp(o, c, offsetof(pd3_control, pad_identity)) == 0);  // identical identity block
  CHECK(other->base() != seg->base());
  // Both mappings are the same memory.
  pd3::aref(seg->control()->req_tail).store(0x1234560, std::memory_order_relaxed);
  CHECK_EQ(pd3::load_relaxed(other->control()->req_tail), 0x1234560u);
  pd3::aref(seg->control()->req_tail).store(0, std::memory_order_relaxed);

  // The C ABI attach (no creator in this process's registry: it validates and maps) and the agent.
  pd3_host* h = nullptr;
  REQUIRE(pd3_host_attach(name.c_str(), &h) == PD3_OK);
  CHECK_EQ(pd3_host_control(h)->req_size, kSmall.request_ring_bytes);
  CHECK_EQ(pd3_host_control(h)->seal_salt, c->seal_salt);
  CHECK_EQ(pd3_host_agent_alive(h), 0);  // no agent yet
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(name.c_str(), &agent) == PD3_OK);
  CHECK_EQ(c->agent_attaches, 1u);
  CHECK_EQ(c->agent_pid, uint32_t(getpid()));
  CHECK(c->agent_heartbeat_ns != 0);
  CHECK_EQ(pd3_host_agent_alive(h), 1);
  // A non-creator handle may not issue requests.
  char buf[8];
  CHECK_EQ(pd3_host_read(h, 1, 0, sizeof buf, buf, 0), PD3_E_NOT_OWNER);
  pd3_host_close(h);
  CHECK(file_exists(shm_path(name)));  // only the creator's close unlinks

  seg->unlink_name();
  CHECK(!file_exists(shm_path(name)));
  seg->unlink_name();  // idempotent
  std::unique_ptr<Segment> gone;
  CHECK_EQ(Segment::attach(name.c_str(), &gone), PD3_E_NOENT);
}

TEST(segment_defaults_and_host_create) {
  pd3test::ScopedHost host("seg-def");
  REQUIRE(host.rc == PD3_OK);
  const pd3_control* c = pd3_host_control(host.h);
  CHECK_EQ(c->req_size, PD3_DEFAULT_REQUEST_RING_BYTES);
  CHECK_EQ(c->resp_size, PD3_DEFAULT_RESPONSE_RING_BYTES);
  CHECK_EQ(c->lz_data_size, PD3_DEFAULT_LZ_DATA_BYTES);
  CHECK_EQ(c->lz_desc_count, PD3_DEFAULT_LZ_ITEMS);
  CHECK_EQ(c->segment_size, file_size(shm_path(host.name)));
  CHECK_EQ(c->lz_tail_seq, 1u);
  CHECK_EQ(c->lz_head_seq, 1u);
  // Closing the creating handle unlinks the name.
  pd3_host_close(host.h);
  host.h = nullptr;
  CHECK(!file_exists(shm_path(host.name)));
}

TEST(segment_duplicate_create_is_refused) {
  const std::string name = pd3test::unique_name("seg-dup");
  std::unique_ptr<Segment> first;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &first) == PD3_OK);
  Unlinker cleanup{shm_path(name)};
  const uint64_t salt = first->control()->seal_salt;

  std::unique_ptr<Segment> second;
  pd3_segment_sizes bigger = kSmall;
  bigger.lz_items = 64;
  CHECK_EQ(Segment::create(name.c_str(), bigger, false, &second), PD3_E_EXISTS);
  CHECK(second == nullptr);
  CHECK(last_error_has("PD3_E_EXISTS"));
  CHECK(last_error_has("exists"));
  CHECK(!temp_file_left(name));

  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.sizes = bigger;
  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_EXISTS);
  CHECK(h == nullptr);
  CHECK(!temp_file_left(name));

  // The original segment is untouched.
  std::unique_ptr<Segment> again;
  REQUIRE(Segment::attach(name.c_str(), &again) == PD3_OK);
  CHECK_EQ(again->control()->seal_salt, salt);
  CHECK_EQ(again->control()->lz_desc_count, kSmall.lz_items);
  CHECK_EQ(again->size(), first->size());
}

TEST(segment_replace_takes_over_the_name) {
  const std::string name = pd3test::unique_name("seg-rep");
  std::unique_ptr<Segment> first;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &first) == PD3_OK);
  Unlinker cleanup{shm_path(name)};

  pd3_segment_sizes other = kSmall;
  other.lz_items = 128;
  other.request_ring_bytes = 4096;
  std::unique_ptr<Segment> second;
  REQUIRE(Segment::create(name.c_str(), other, true, &second) == PD3_OK);
  CHECK(!temp_file_left(name));
  CHECK(second->control()->seal_salt != first->control()->seal_salt);

  std::unique_ptr<Segment> att;
  REQUIRE(Segment::attach(name.c_str(), &att) == PD3_OK);
  CHECK_EQ(att->control()->lz_desc_count, 128u);
  CHECK_EQ(att->control()->req_size, 4096u);
  CHECK_EQ(att->control()->seal_salt, second->control()->seal_salt);
  CHECK_EQ(att->size(), file_size(shm_path(name)));
  // The replaced segment's mapping stays valid and separate.
  pd3::aref(first->control()->req_head).store(77, std::memory_order_relaxed);
  CHECK_EQ(pd3::load_relaxed(att->control()->req_head), 0u);
  CHECK_EQ(first->control()->lz_desc_count, kSmall.lz_items);

  // The same through the C ABI flag.
  att.reset();
  second.reset();
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.sizes = kSmall;
  cfg.flags = PD3_HOST_REPLACE;
  pd3_host* h = nullptr;
  REQUIRE(pd3_host_create(&cfg, &h) == PD3_OK);
  CHECK_EQ(pd3_host_control(h)->lz_desc_count, kSmall.lz_items);
  REQUIRE(Segment::attach(name.c_str(), &att) == PD3_OK);
  CHECK_EQ(att->control()->seal_salt, pd3_host_control(h)->seal_salt);
  pd3_host_close(h);
  CHECK(!file_exists(shm_path(name)));
}

TEST(segment_attach_refuses_wrong_magic) {
  const std::string name = pd3test::unique_name("seg-magic");
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{shm_path(name)};
  REQUIRE(poke_field<uint64_t>(shm_path(name), offsetof(pd3_control, magic), PD3_SEGMENT_MAGIC ^ 0x100));
  expect_refused(name, PD3_E_BAD_MAGIC, "magic");
  REQUIRE(poke_field<uint64_t>(shm_path(name), offsetof(pd3_control, magic), 0));
  expect_refused(name, PD3_E_BAD_MAGIC, "magic");
  // Restored, it attaches again: the refusal was about the magic alone.
  REQUIRE(poke_field<uint64_t>(shm_path(name), offsetof(pd3_control, magic), PD3_SEGMENT_MAGIC));
  std::unique_ptr<Segment> ok;
  CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);
}

TEST(segment_attach_refuses_wrong_version) {
  const std::string name = pd3test::unique_name("seg-ver");
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{shm_path(name)};
  for (uint32_t v : {0u, PD3_LAYOUT_VERSION + 1, 0xFFFFFFFFu}) {
    REQUIRE(poke_field<uint32_t>(shm_path(name), offsetof(pd3_control, layout_version), v));
    expect_refused(name, PD3_E_BAD_VERSION, "version");
    CHECK(last_error_has(std::to_string(v).c_str()));
  }
  REQUIRE(poke_field<uint32_t>(shm_path(name), offsetof(pd3_control, layout_version), PD3_LAYOUT_VERSION));
  std::unique_ptr<Segment> ok;
  CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);
}

TEST(segment_attach_refuses_too_small_files) {
  const std::string name = pd3test::unique_name("seg-tiny");
  const std::string path = shm_path(name);
  Unlinker cleanup{path};
  // 100 bytes that even start with a valid magic: still too small for a control block.
  std::vector<uint8_t> bytes(100, 0);
  const uint64_t magic = PD3_SEGMENT_MAGIC;
  std::memcpy(bytes.data(), &magic, sizeof magic);
  REQUIRE(write_file(path, bytes));
  expect_refused(name, PD3_E_BAD_SIZE, "smaller");
  CHECK(last_error_has("100"));
  REQUIRE(write_file(path, {}));
  expect_refused(name, PD3_E_BAD_SIZE, "smaller");
  REQUIRE(write_file(path, std::vector<uint8_t>(PD3_CONTROL_SIZE - 1, 0)));
  expect_refused(name, PD3_E_BAD_SIZE, "smaller");
}

TEST(segment_attach_refuses_size_mismatch) {
  const std::string name = pd3test::unique_name("seg-size");
  const std::string path = shm_path(name);
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{path};
  const uint64_t size = seg->size();
  seg.reset();  // unmap before resizing the file

  REQUIRE(::truncate(path.c_str(), off_t(size + 4096)) == 0);
  expect_refused(name, PD3_E_BAD_SIZE, std::to_string(size + 4096).c_str());
  CHECK(last_error_has(std::to_string(size).c_str()));
  REQUIRE(::truncate(path.c_str(), off_t(size + 1)) == 0);
  expect_refused(name, PD3_E_BAD_SIZE, std::to_string(size + 1).c_str());
  REQUIRE(::truncate(path.c_str(), off_t(size - 4096)) == 0);
  expect_refused(name, PD3_E_BAD_SIZE, std::to_string(size - 4096).c_str());

  // A control block that agrees with the shortened file is still refused: the layout for its
  // sizes needs `size` bytes.
  REQUIRE(poke_field<uint64_t>(path, offsetof(pd3_control, segment_size), size - 4096));
  expect_refused(name, PD3_E_BAD_LAYOUT, "segment_size");

  REQUIRE(poke_field<uint64_t>(path, offsetof(pd3_control, segment_size), size));
  REQUIRE(::truncate(path.c_str(), off_t(size)) == 0);
  std::unique_ptr<Segment> ok;
  CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);
}

TEST(segment_attach_refuses_tampered_layout) {
  const std::string name = pd3test::unique_name("seg-layout");
  const std::string path = shm_path(name);
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{path};
  seg.reset();

  struct Tamper {
    size_t offset;
    bool wide;  // u64 field (else u32)
    uint64_t value;
    int status;
    const char* mention;
  };
  const pd3_control want = [&] {
    pd3_control c{};
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      if (::pread(fd, &c, sizeof c, 0) != ssize_t(sizeof c)) c = pd3_control{};
      ::close(fd);
    }
    return c;
  }();
  REQUIRE(want.magic == PD3_SEGMENT_MAGIC);
  const Tamper cases[] = {
      {offsetof(pd3_control, req_offset), true, want.req_offset + 4096, PD3_E_BAD_LAYOUT, "req_offset"},
      {offsetof(pd3_control, req_offset), true, 0, PD3_E_BAD_LAYOUT, "req_offset"},
      {offsetof(pd3_control, resp_offset), true, want.req_offset, PD3_E_BAD_LAYOUT, "resp_offset"},
      {offsetof(pd3_control, lz_desc_offset), true, want.lz_desc_offset - 8, PD3_E_BAD_LAYOUT, "lz_desc_offset"},
      {offsetof(pd3_control, lz_bucket_offset), true, ~0ull, PD3_E_BAD_LAYOUT, "lz_bucket_offset"},
      {offsetof(pd3_control, lz_data_offset), true, want.segment_size, PD3_E_BAD_LAYOUT, "lz_data_offset"},
      {offsetof(pd3_control, lz_bucket_count), false, want.lz_bucket_count * 2, PD3_E_BAD_LAYOUT, "lz_bucket_count"},
      {offsetof(pd3_control, control_size), false, 8192, PD3_E_BAD_LAYOUT, "control_size"},
      {offsetof(pd3_control, req_size), true, 12345, PD3_E_BAD_LAYOUT, "request ring"},
      {offsetof(pd3_control, req_size), true, 1ull << 40, PD3_E_BAD_LAYOUT, "request ring"},
      {offsetof(pd3_control, resp_size), true, want.resp_size * 2, PD3_E_BAD_LAYOUT, "expected"},
      {offsetof(pd3_control, lz_desc_count), false, 17, PD3_E_BAD_LAYOUT, "items"},
      {offsetof(pd3_control, lz_desc_count), false, 0, PD3_E_BAD_LAYOUT, "PD3_E_BAD_LAYOUT"},
      {offsetof(pd3_control, lz_data_size), true, 100, PD3_E_BAD_LAYOUT, "loading zone data"},
  };
  for (const Tamper& t : cases) {
    const uint64_t old = t.wide ? peek_field<uint64_t>(path, t.offset) : peek_field<uint32_t>(path, t.offset);
    REQUIRE(t.wide ? poke_field<uint64_t>(path, t.offset, t.value) : poke_field<uint32_t>(path, t.offset, uint32_t(t.value)));
    expect_refused(name, t.status, t.mention);
    REQUIRE(t.wide ? poke_field<uint64_t>(path, t.offset, old) : poke_field<uint32_t>(path, t.offset, uint32_t(old)));
    std::unique_ptr<Segment> ok;
    CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);  // restored: accepted again
  }
}

TEST(segment_attach_refuses_zero_section_sizes) {
  // Creation reads a 0 size as "the default"; attach must not: a control block whose size field is
  // 0 would make every ring or zone mask all-ones. Default-sized segments are the dangerous case,
  // because the layout for "0 = default" is then identical to the real one.
  const std::string name = pd3test::unique_name("seg-zero");
  const std::string path = shm_path(name);
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), pd3_segment_sizes{}, false, &seg) == PD3_OK);
  Unlinker cleanup{path};
  seg.reset();
  const struct {
    size_t offset;
    bool wide;
  } fields[] = {{offsetof(pd3_control, req_size), true},
                {offsetof(pd3_control, resp_size), true},
                {offsetof(pd3_control, lz_data_size), true},
                {offsetof(pd3_control, lz_desc_count), false}};
  for (const auto& f : fields) {
    const uint64_t old = f.wide ? peek_field<uint64_t>(path, f.offset) : peek_field<uint32_t>(path, f.offset);
    REQUIRE(old != 0);
    REQUIRE(f.wide ? poke_field<uint64_t>(path, f.offset, 0) : poke_field<uint32_t>(path, f.offset, 0));
    expect_refused(name, PD3_E_BAD_LAYOUT, "PD3_E_BAD_LAYOUT");
    REQUIRE(f.wide ? poke_field<uint64_t>(path, f.offset, old) : poke_field<uint32_t>(path, f.offset, uint32_t(old)));
    std::unique_ptr<Segment> ok;
    CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);
  }
}

TEST(segment_attach_detects_every_identity_bit_flip) {
  const std::string name = pd3test::unique_name("seg-flip");
  const std::string path = shm_path(name);
  std::unique_ptr<Segment> seg;
  REQUIRE(Segment::create(name.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{path};
  seg.reset();
  // Every field attach relies on (magic .. lz_bucket_count): a flip of any bit must be refused.
  const size_t end = offsetof(pd3_control, creator_pid);
  int refused = 0, tried = 0;
  for (size_t byte = 0; byte < end; ++byte) {
    const uint8_t orig = peek_field<uint8_t>(path, byte);
    for (int bit = 0; bit < 8; ++bit) {
      REQUIRE(poke_field<uint8_t>(path, byte, uint8_t(orig ^ (1u << bit))));
      std::unique_ptr<Segment> s;
      const int rc = Segment::attach(name.c_str(), &s);
      ++tried;
      if (rc == PD3_E_BAD_MAGIC || rc == PD3_E_BAD_VERSION || rc == PD3_E_BAD_SIZE || rc == PD3_E_BAD_LAYOUT) {
        ++refused;
      } else {
        std::fprintf(stderr, "  flip of byte %zu bit %d: attach returned %d\n", byte, bit, rc);
      }
      CHECK(std::strlen(pd3_last_error()) > 0);
    }
    REQUIRE(poke_field<uint8_t>(path, byte, orig));
  }
  CHECK_EQ(refused, tried);
  std::unique_ptr<Segment> ok;
  CHECK_EQ(Segment::attach(name.c_str(), &ok), PD3_OK);
}

TEST(segment_attach_refuses_foreign_files) {
  // Random bytes under /dev/shm.
  const std::string name = pd3test::unique_name("seg-foreign");
  Unlinker c1{shm_path(name)};
  REQUIRE(write_file(shm_path(name), random_bytes(64 << 10, 7)));
  expect_refused(name, PD3_E_BAD_MAGIC, "magic");
  // All zeros (e.g. a freshly truncated file nobody initialised).
  REQUIRE(write_file(shm_path(name), std::vector<uint8_t>(64 << 10, 0)));
  expect_refused(name, PD3_E_BAD_MAGIC, "not a PD3 segment");

  // Absolute paths to regular files elsewhere.
  const std::string tmp = "/tmp/" + pd3test::unique_name("foreign");
  Unlinker c2{tmp};
  REQUIRE(write_file(tmp, random_bytes(64 << 10, 11)));
  expect_refused(tmp, PD3_E_BAD_MAGIC, "magic");
  REQUIRE(write_file(tmp, random_bytes(100, 12)));
  expect_refused(tmp, PD3_E_BAD_SIZE, "smaller");
  // A valid magic and version over garbage: caught by the size or layout checks.
  std::vector<uint8_t> forged = random_bytes(64 << 10, 13);
  const uint64_t magic = PD3_SEGMENT_MAGIC;
  const uint32_t version = PD3_LAYOUT_VERSION;
  std::memcpy(forged.data() + offsetof(pd3_control, magic), &magic, 8);
  std::memcpy(forged.data() + offsetof(pd3_control, layout_version), &version, 4);
  REQUIRE(write_file(tmp, forged));
  expect_refused(tmp, PD3_E_BAD_SIZE, "file is 65536 bytes");
  const uint64_t size = forged.size();
  std::memcpy(forged.data() + offsetof(pd3_control, segment_size), &size, 8);
  REQUIRE(write_file(tmp, forged));
  expect_refused(tmp, PD3_E_BAD_LAYOUT, "PD3_E_BAD_LAYOUT");

  // Not a regular file at all.
  std::unique_ptr<Segment> seg;
  CHECK_EQ(Segment::attach("/dev/null", &seg), PD3_E_BAD_SIZE);
  CHECK(last_error_has("not a regular file"));
  const int rc = Segment::attach("/tmp", &seg);  // a directory cannot even be opened read-write
  CHECK(rc == PD3_E_SYS || rc == PD3_E_BAD_SIZE);
  CHECK(last_error_has("/tmp"));
  CHECK(seg == nullptr);
}

TEST(segment_attach_nonexistent_name) {
  const std::string name = pd3test::unique_name("seg-none");
  REQUIRE(!file_exists(shm_path(name)));
  expect_refused(name, PD3_E_NOENT, name.c_str());
  expect_refused("/tmp/" + name, PD3_E_NOENT, name.c_str());
}

TEST(segment_invalid_names) {
  const std::string long300(300, 'a');
  const std::string long201(201, 'b');
  const char* bad[] = {"", "../x", "a/b", long300.c_str(), long201.c_str(), ".hidden", ".", "..",
                       "a b", "semi;colon", "tab\t", "x/"};
  for (const char* name : bad) {
    std::unique_ptr<Segment> seg;
    CHECK_EQ(Segment::create(name, kSmall, false, &seg), PD3_E_INVAL);
    CHECK(last_error_has("PD3_E_INVAL"));
    CHECK(seg == nullptr);
    pd3_host_config cfg{};
    cfg.name = name;
    pd3_host* h = nullptr;
    CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_INVAL);
    CHECK(last_error_has("name"));
    CHECK(h == nullptr);
    CHECK_EQ(pd3_host_attach(name, &h), PD3_E_INVAL);
    CHECK(h == nullptr);
    CHECK_EQ(Segment::attach(name, &seg), PD3_E_INVAL);
    CHECK(last_error_has("name"));
    std::unique_ptr<pd3::AgentSession> agent;
    CHECK_EQ(pd3::AgentSession::attach(name, &agent), PD3_E_INVAL);
  }
  // nullptr names and configs.
  pd3_host* h = nullptr;
  pd3_host_config cfg{};
  CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_INVAL);
  CHECK_EQ(pd3_host_create(nullptr, &h), PD3_E_INVAL);
  cfg.name = "x";
  CHECK_EQ(pd3_host_create(&cfg, nullptr), PD3_E_INVAL);
  CHECK_EQ(pd3_host_attach(nullptr, &h), PD3_E_INVAL);
  CHECK_EQ(pd3_host_attach("x", nullptr), PD3_E_INVAL);
  // Creating at an absolute path is not allowed (only attach accepts them).
  const std::string abs = "/tmp/" + pd3test::unique_name("abs");
  std::unique_ptr<Segment> seg;
  CHECK_EQ(Segment::create(abs.c_str(), kSmall, false, &seg), PD3_E_INVAL);
  CHECK(!file_exists(abs));

  // The longest valid name works.
  std::string longest = pd3test::unique_name("max");
  longest.resize(PD3_NAME_MAX, 'z');
  REQUIRE(Segment::create(longest.c_str(), kSmall, false, &seg) == PD3_OK);
  Unlinker cleanup{shm_path(longest)};
  std::unique_ptr<Segment> att;
  CHECK_EQ(Segment::attach(longest.c_str(), &att), PD3_OK);
  // Names with every allowed character class.
  const std::string mixed = pd3test::unique_name("Mixed_chars.v2");
  std::unique_ptr<Segment> m;
  CHECK_EQ(Segment::create(mixed.c_str(), kSmall, false, &m), PD3_OK);
  Unlinker cleanup2{shm_path(mixed)};
}

TEST(segment_invalid_sizes) {
  struct Bad {
    pd3_segment_sizes sizes;
    const char* mention;
  };
  const Bad bad[] = {
      {{5000, 0, 0, 0, 0}, "request ring"},
      {{2048, 0, 0, 0, 0}, "request ring"},
      {{PD3_RING_MAX_BYTES * 2, 0, 0, 0, 0}, "request ring"},
      {{0, 4096 + 16, 0, 0, 0}, "response ring"},
      {{0, 1024, 0, 0, 0}, "response ring"},
      {{0, 0, 3ull << 20, 0, 0}, "loading zone data"},
      {{0, 0, 2048, 0, 0}, "loading zone data"},
      {{0, 0, 1ull << 31, 0, 0}, "loading zone data"},
      {{0, 0, 0, 8, 0}, "items"},
      {{0, 0, 0, 100, 0}, "items"},
      {{0, 0, 0, PD3_LZ_MAX_ITEMS * 2, 0}, "items"},
      {{0, 0, 0, 0x80000000u, 0}, "items"},
  };
  for (const Bad& b : bad) {
    const std::string name = pd3test::unique_name("seg-badsize");
    std::unique_ptr<Segment> seg;
    CHECK_EQ(Segment::create(name.c_str(), b.sizes, false, &seg), PD3_E_INVAL);
    CHECK(last_error_has(b.mention));
    CHECK(last_error_has("power of two"));
    pd3_host_config cfg{};
    cfg.name = name.c_str();
    cfg.sizes = b.sizes;
    pd3_host* h = nullptr;
    CHECK_EQ(pd3_host_create(&cfg, &h), PD3_E_INVAL);
    CHECK(last_error_has(b.mention));
    CHECK(!file_exists(shm_path(name)));
    CHECK(!temp_file_left(name));
  }
  // The smallest sizes are accepted.
  const std::string name = pd3test::unique_name("seg-minsize");
  std::unique_ptr<Segment> seg;
  const pd3_segment_sizes min{PD3_RING_MIN_BYTES, PD3_RING_MIN_BYTES, PD3_RING_MIN_BYTES, PD3_LZ_MIN_ITEMS, 0};
  REQUIRE(Segment::create(name.c_str(), min, false, &seg) == PD3_OK);
  Unlinker cleanup{shm_path(name)};
  CHECK_EQ(seg->control()->lz_desc_count, PD3_LZ_MIN_ITEMS);
  std::unique_ptr<Segment> att;
  CHECK_EQ(Segment::attach(name.c_str(), &att), PD3_OK);
}
