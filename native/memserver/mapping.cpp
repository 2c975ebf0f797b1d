// mapping.cpp — see mapping.hpp.
#include "memserver/mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <utility>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

uint64_t page_size() {
  static const uint64_t size = [] {
    const long s = sysconf(_SC_PAGESIZE);
    return s > 0 ? uint64_t(s) : uint64_t(4096);
  }();
  return size;
}

}  // namespace

int Mapping::anonymous(uint64_t bytes, Mapping* out) {
  if (bytes == 0) return fail(PD3_E_INVAL, "empty anonymous mapping");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return fail(PD3_E_NOMEM, "mmap of %llu anonymous bytes: %s", (unsigned long long)bytes, strerror(errno));
  Mapping m;
  m.data_ = static_cast<uint8_t*>(p);
  m.bytes_ = bytes;
  *out = std::move(m);
  return PD3_OK;
}

int Mapping::shared_file(int fd, uint64_t bytes, Mapping* out) {
  if (bytes == 0) return fail(PD3_E_INVAL, "empty file mapping");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail(PD3_E_SYS, "mmap of %llu file bytes: %s", (unsigned long long)bytes, strerror(errno));
  Mapping m;
  m.data_ = static_cast<uint8_t*>(p);
  m.bytes_ = bytes;
  m.file_backed_ = true;
  *out = std::move(m);
  return PD3_OK;
}

Mapping::Mapping(Mapping&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      file_backed_(std::exchange(o.file_backed_, false)) {}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    file_backed_ = std::exchange(o.file_backed_, false);
  }
  return *this;
}

Mapping::~Mapping() { release(); }

void Mapping::release() {
  if (data_ != nullptr) munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
  file_backed_ = false;
}

uint64_t Mapping::resident_bytes(uint64_t lo, uint64_t hi) const {
  if (data_ == nullptr || lo >= hi || lo >= bytes_) return 0;
  if (hi > bytes_) hi = bytes_;
  const uint64_t page = page_size();
  uint64_t at = lo / page * page;
  uint64_t resident = 0;
  unsigned char vec[256];  // one mincore call per 256 pages: no allocation on the read path
  while (at < hi) {
    const uint64_t span = std::min<uint64_t>(hi - at, sizeof vec * page);
    if (mincore(data_ + at, span, vec) != 0) return 0;
    const uint64_t pages = (span + page - 1) / page;
    for (uint64_t i = 0; i < pages; ++i) resident += vec[i] & 1u;
    at += span;
  }
  return resident * page;
}

int Mapping::give_back(uint64_t* released) const {
  *released = 0;
  if (!file_backed_) return fail(PD3_E_INVAL, "anonymous memory has no file to give it back to");
  if (data_ == nullptr) return PD3_OK;
  if (msync(data_, bytes_, MS_SYNC) != 0) return fail(PD3_E_SYS, "msync before giving memory back: %s", strerror(errno));
  const uint64_t before = resident_bytes(0, bytes_);
  if (madvise(data_, bytes_, MADV_PAGEOUT) != 0) return fail(PD3_E_SYS, "madvise(MADV_PAGEOUT): %s", strerror(errno));
  const uint64_t after = resident_bytes(0, bytes_);
  *released = before > after ? before - after : 0;
  return PD3_OK;
}

int Mapping::flush(uint64_t lo, uint64_t hi) const {
  if (!file_backed_) return PD3_OK;
  if (hi > bytes_) hi = bytes_;
  if (lo >= hi) return PD3_OK;
  // msync wants a page-aligned start; the end may be anywhere (the kernel rounds it up).
  const uint64_t start = lo & ~(page_size() - 1);
  if (msync(data_ + start, hi - start, MS_SYNC) != 0)
    return fail(PD3_E_SYS, "msync of [%llu, %llu): %s", (unsigned long long)start, (unsigned long long)hi, strerror(errno));
  return PD3_OK;
}

}  // namespace pd3
