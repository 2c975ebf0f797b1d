// mapping.hpp — an owned memory mapping: lazily reserved anonymous memory, or a shared mapping of a
// file whose ranges can be written back to it (msync).
#pragma once

#include <cstdint>

namespace pd3 {

// A memory mapping with a single owner (RAII, move-only); empty when data() is nullptr.
class Mapping {
 public:
  Mapping() = default;
  // Zero-filled private anonymous memory (MAP_NORESERVE: pages are taken on first touch, so a large
  // region costs nothing until written). Returns PD3_OK or PD3_E_NOMEM.
  static int anonymous(uint64_t bytes, Mapping* out);
  // A read/write MAP_SHARED mapping of fd's first `bytes`. Returns PD3_OK or PD3_E_SYS.
  static int shared_file(int fd, uint64_t bytes, Mapping* out);

  Mapping(Mapping&& o) noexcept;
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  uint8_t* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  bool file_backed() const { return file_backed_; }

  // Writes the pages overlapping [lo, hi) back to the file and waits for them (msync MS_SYNC).
  // Does nothing for anonymous memory or an empty range. Returns PD3_OK or PD3_E_SYS.
  int flush(uint64_t lo, uint64_t hi) const;

  // Bytes of the pages overlapping [lo, hi) that are in memory now (mincore), page-granular.
  uint64_t resident_bytes(uint64_t lo, uint64_t hi) const;
  // Gives a file-backed mapping's memory back to the machine: writes every page back (msync),
  // then has the kernel reclaim them (MADV_PAGEOUT); later accesses fault them in from the file.
  // Sets *released to the resident bytes that went. Returns PD3_OK, PD3_E_INVAL (anonymous memory
  // has no file to fall back on) or PD3_E_SYS.
  [[nodiscard]] int give_back(uint64_t* released) const;

 private:
  void release();
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
  bool file_backed_ = false;
};

}  // namespace pd3
