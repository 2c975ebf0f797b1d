// segment.cpp — canonical layout, creation with atomic publish, and attach-time validation.
#include "common/name_chars.hpp"
#include "common/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/error.hpp"
#include "pd3/status.h"
#include "pd3/wire.h"

namespace pd3 {

static_assert(sizeof(pd3_control) <= PD3_CONTROL_SIZE, "control block must fit its page");
static_assert(offsetof(pd3_control, agent_heartbeat_ns) == 2 * PD3_CACHE_LINE, "agent line");
static_assert(offsetof(pd3_control, req_tail) % PD3_CACHE_LINE == 0, "cursor on its own line");
static_assert(offsetof(pd3_control, req_head) - offsetof(pd3_control, req_tail) == PD3_CACHE_LINE);
static_assert(offsetof(pd3_control, resp_tail) % PD3_CACHE_LINE == 0, "cursor on its own line");
static_assert(offsetof(pd3_control, resp_head) - offsetof(pd3_control, resp_tail) == PD3_CACHE_LINE);
static_assert(offsetof(pd3_control, lz_tail_seq) % PD3_CACHE_LINE == 0, "LZ cursors on their own line");
static_assert(offsetof(pd3_control, req_fence) == 10 * PD3_CACHE_LINE, "host fence on its own line");
static_assert(offsetof(pd3_control, agent_fenced) == 11 * PD3_CACHE_LINE, "agent counters off the fence line");
static_assert(offsetof(pd3_control, host_requests) % PD3_CACHE_LINE == 0, "host counters line");
static_assert(offsetof(pd3_control, agent_batches) % PD3_CACHE_LINE == 0, "agent counters line");
static_assert(sizeof(pd3_lz_desc) == 32, "two descriptors per cache line");
static_assert(sizeof(pd3_lz_record) == 16 && sizeof(pd3_slot) == 16, "8-aligned record headers");
static_assert(offsetof(pd3_slot, length) == 8 && offsetof(pd3_slot, kind) == 12 && offsetof(pd3_slot, count) == 14,
              "pd3_slot layout (exported to TS as SLOT_COUNT)");
static_assert(PD3_SLOT_ALIGN % PD3_RECORD_ALIGN == 0 && sizeof(pd3_request) % PD3_RECORD_ALIGN == 0 &&
                  sizeof(pd3_response) % PD3_RECORD_ALIGN == 0,
              "a batch slot's records keep their headers 8-aligned");
// The request header: the paper's 12 bytes (§6.1) widened to 16 for 32-bit region ids
// (docs/wire-formats.md); every field at its natural alignment, so packing changes nothing.
static_assert(sizeof(pd3_request) == 16, "request header: 16 bytes");
static_assert(offsetof(pd3_request, op_id) == 0 && offsetof(pd3_request, reserved) == 2 &&
                  offsetof(pd3_request, region) == 4 && offsetof(pd3_request, offset) == 8 &&
                  offsetof(pd3_request, size) == 12,
              "request header field offsets");
static_assert(sizeof(pd3_alloc_reply) == 8 && offsetof(pd3_alloc_reply, region) == 0 &&
                  offsetof(pd3_alloc_reply, capacity) == 4,
              "ALLOCATE reply: region u32, capacity u32");
static_assert(sizeof(pd3_response) == 8, "response header");

namespace {

constexpr bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

int check_ring(const char* what, uint64_t bytes) {
  if (!is_pow2(bytes) || bytes < PD3_RING_MIN_BYTES || bytes > PD3_RING_MAX_BYTES)
    return fail(PD3_E_INVAL, "%s is %llu bytes; it must be a power of two in [%llu, %llu]", what,
                (unsigned long long)bytes, (unsigned long long)PD3_RING_MIN_BYTES,
                (unsigned long long)PD3_RING_MAX_BYTES);
  return PD3_OK;
}

uint64_t now_unix_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Maps `fd` read-write; returns nullptr on failure (errno set).
uint8_t* map_fd(int fd, uint64_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

int plan_layout(const pd3_segment_sizes& in, pd3_control* c) {
  const uint64_t req = in.request_ring_bytes ? in.request_ring_bytes : PD3_DEFAULT_REQUEST_RING_BYTES;
  const uint64_t resp = in.response_ring_bytes ? in.response_ring_bytes : PD3_DEFAULT_RESPONSE_RING_BYTES;
  const uint64_t data = in.lz_data_bytes ? in.lz_data_bytes : PD3_DEFAULT_LZ_DATA_BYTES;
  const uint32_t items = in.lz_items ? in.lz_items : PD3_DEFAULT_LZ_ITEMS;
  if (int rc = check_ring("request ring", req)) return rc;
  if (int rc = check_ring("response ring", resp)) return rc;
  if (int rc = check_ring("loading zone data", data)) return rc;
  if (!is_pow2(items) || items < PD3_LZ_MIN_ITEMS || items > PD3_LZ_MAX_ITEMS)
    return fail(PD3_E_INVAL, "loading zone items is %u; it must be a power of two in [%u, %u]", items,
                PD3_LZ_MIN_ITEMS, PD3_LZ_MAX_ITEMS);

  std::memset(c, 0, sizeof *c);
  c->magic = PD3_SEGMENT_MAGIC;
  c->layout_version = PD3_LAYOUT_VERSION;
  c->control_size = PD3_CONTROL_SIZE;
  c->host_wake_at = PD3_WAKE_NEVER;  // nobody waits yet
  uint64_t at = PD3_CONTROL_SIZE;
  c->req_offset = at, c->req_size = req, at = align_up(at + req, PD3_SECTION_ALIGN);
  c->resp_offset = at, c->resp_size = resp, at = align_up(at + resp, PD3_SECTION_ALIGN);
  c->lz_desc_count = items;
  c->lz_bucket_count = items * 2;  // load factor <= 0.5 keeps chains short
  c->lz_desc_offset = at, at = align_up(at + uint64_t(items) * sizeof(pd3_lz_desc), PD3_SECTION_ALIGN);
  c->lz_bucket_offset = at, at = align_up(at + uint64_t(items) * 2 * sizeof(uint64_t), PD3_SECTION_ALIGN);
  c->lz_data_offset = at, c->lz_data_size = data, at = align_up(at + data, PD3_SECTION_ALIGN);
  c->segment_size = at;
  c->lz_tail_seq = c->lz_head_seq = 1;  // seq 0 means "no item" in chain links
  return PD3_OK;
}

int validate_segment(const void* base, uint64_t file_size) {
  if (file_size < PD3_CONTROL_SIZE)
    return fail(PD3_E_BAD_SIZE, "segment file is %llu bytes, smaller than its %u-byte control block",
                (unsigned long long)file_size, PD3_CONTROL_SIZE);
  const auto* c = static_cast<const pd3_control*>(base);
  if (c->magic != PD3_SEGMENT_MAGIC)
    return fail(PD3_E_BAD_MAGIC, "magic is 0x%016llx, expected 0x%016llx: not a PD3 segment",
                (unsigned long long)c->magic, (unsigned long long)PD3_SEGMENT_MAGIC);
  if (c->layout_version != PD3_LAYOUT_VERSION)
    return fail(PD3_E_BAD_VERSION, "layout version is %u, this build speaks version %u",
                c->layout_version, PD3_LAYOUT_VERSION);
  if (c->segment_size != file_size)
    return fail(PD3_E_BAD_SIZE, "control block says %llu bytes but the file is %llu bytes",
                (unsigned long long)c->segment_size, (unsigned long long)file_size);

  // The only accepted layout is the canonical one for the sizes the control block claims.
  pd3_segment_sizes sizes{c->req_size, c->resp_size, c->lz_data_size, c->lz_desc_count, 0};
  pd3_control want{};
  if (plan_layout(sizes, &want) != PD3_OK)
    return fail(PD3_E_BAD_LAYOUT, "section sizes are invalid: %s", pd3_last_error());
#define PD3_CHECK_FIELD(f)                                                                        \
  if (c->f != want.f)                                                                             \
    return fail(PD3_E_BAD_LAYOUT, "%s is %llu, expected %llu for these sizes", #f,                \
                (unsigned long long)c->f, (unsigned long long)want.f);
  // A 0 size means "default" only at create; in a segment it would make every mask all ones.
  PD3_CHECK_FIELD(req_size)
  PD3_CHECK_FIELD(resp_size)
  PD3_CHECK_FIELD(lz_data_size)
  PD3_CHECK_FIELD(lz_desc_count)
  PD3_CHECK_FIELD(control_size)
  PD3_CHECK_FIELD(req_offset)
  PD3_CHECK_FIELD(resp_offset)
  PD3_CHECK_FIELD(lz_desc_offset)
  PD3_CHECK_FIELD(lz_bucket_offset)
  PD3_CHECK_FIELD(lz_data_offset)
  PD3_CHECK_FIELD(lz_bucket_count)
  PD3_CHECK_FIELD(segment_size)
#undef PD3_CHECK_FIELD
  return PD3_OK;
}

bool segment_path(const char* name, std::string* path) {
  if (name == nullptr || name[0] == '\0') return false;
  if (name[0] == '/') {
    *path = name;
    return true;
  }
  size_t n = 0;
  for (const char* p = name; *p; ++p, ++n) {
    if (!is_name_char(*p) || n >= 200) return false;
  }
  if (name[0] == '.') return false;  // no "." / ".." or hidden temp names
  *path = std::string("/dev/shm/") + name;
  return true;
}

int Segment::create(const char* name, const pd3_segment_sizes& sizes, bool replace,
                    std::unique_ptr<Segment>* out) {
  clear_error();
  std::string path;
  if (!segment_path(name, &path) || name[0] == '/')
    return fail(PD3_E_INVAL, "segment name '%s' must be 1-200 chars of [A-Za-z0-9._-]", name ? name : "");
  pd3_control plan;
  if (int rc = plan_layout(sizes, &plan)) return rc;

  // Build under a private temporary name, then publish with link() (fails if the name exists)
  // or rename() (replaces it), so attachers only ever see a complete control block.
  uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) nonce = now_unix_ns();
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", (unsigned long long)nonce);
  // Unique per call, so concurrent creators of one name never publish each other's file.
  const std::string tmp = "/dev/shm/.pd3-tmp-" + std::to_string(getpid()) + "-" + suffix;
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fail(PD3_E_SYS, "open %s: %s", tmp.c_str(), std::strerror(errno));
  auto abandon = [&](int status, const char* what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ::close(fd);
    return fail(status, "%s %s: %s", what, path.c_str(), std::strerror(err));
  };
  if (::ftruncate(fd, off_t(plan.segment_size)) != 0) return abandon(PD3_E_NOMEM, "ftruncate");
  uint8_t* base = map_fd(fd, plan.segment_size);
  if (base == nullptr) return abandon(PD3_E_NOMEM, "mmap");
  plan.creator_pid = uint32_t(getpid());
  plan.created_unix_ns = now_unix_ns();
  if (::getrandom(&plan.seal_salt, sizeof plan.seal_salt, 0) != sizeof plan.seal_salt)
    plan.seal_salt = plan.created_unix_ns * 0x9E3779B97F4A7C15ull;  // entropy pool not ready: still unique
  std::memcpy(base, &plan, sizeof plan);

  int rc = replace ? ::rename(tmp.c_str(), path.c_str()) : ::link(tmp.c_str(), path.c_str());
  if (rc != 0) {
    const int err = errno;
    munmap(base, plan.segment_size);
    ::unlink(tmp.c_str());
    ::close(fd);
    if (err == EEXIST)
      return fail(PD3_E_EXISTS, "segment %s already exists (pass replace to take it over)", path.c_str());
    return fail(PD3_E_SYS, "publish %s: %s", path.c_str(), std::strerror(err));
  }
  if (!replace) ::unlink(tmp.c_str());
  out->reset(new Segment(path, fd, base, plan.segment_size));
  return PD3_OK;
}

int Segment::attach(const char* name, std::unique_ptr<Segment>* out) {
  clear_error();
  std::string path;
  if (!segment_path(name, &path))
    return fail(PD3_E_INVAL, "segment name '%s' must be 1-200 chars of [A-Za-z0-9._-] or an absolute path",
                name ? name : "");
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return fail(err == ENOENT ? PD3_E_NOENT : PD3_E_SYS, "open %s: %s", path.c_str(), std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(PD3_E_BAD_SIZE, "%s is not a regular file", path.c_str());
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size < PD3_CONTROL_SIZE) {
    ::close(fd);
    return validate_segment(nullptr, size);
  }
  uint8_t* base = map_fd(fd, size);
  if (base == nullptr) {
    const int err = errno;
    ::close(fd);
    return fail(PD3_E_SYS, "mmap %s: %s", path.c_str(), std::strerror(err));
  }
  if (int rc = validate_segment(base, size)) {
    munmap(base, size);
    ::close(fd);
    return rc;
  }
  out->reset(new Segment(path, fd, base, size));
  return PD3_OK;
}

void Segment::unlink_name() {
  if (unlinked_) return;
  unlinked_ = true;
  // Only remove the name while it still refers to our file: after a `replace` it names another
  // segment, which must survive our close.
  struct stat mine {}, named {};
  if (::fstat(fd_, &mine) == 0 && ::stat(path_.c_str(), &named) == 0 && mine.st_dev == named.st_dev &&
      mine.st_ino == named.st_ino)
    ::unlink(path_.c_str());
}

Segment::~Segment() {
  munmap(base_, size_);
  ::close(fd_);
}

}  // namespace pd3
