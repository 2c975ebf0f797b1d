// segment.hpp — the shared host↔agent segment: canonical layout, creation, attach-time validation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pd3/segment.h"

namespace pd3 {

// Fills the identity fields of `out` (offsets, sizes, counts) for the requested sizes; 0 sizes take
// the defaults. Returns PD3_OK or PD3_E_INVAL (with pd3_last_error saying which size is wrong).
int plan_layout(const pd3_segment_sizes& sizes, pd3_control* out);

// Checks a mapped segment of `file_size` bytes: magic, version, size and the layout its sizes imply.
// Returns PD3_OK or PD3_E_BAD_SIZE / PD3_E_BAD_MAGIC / PD3_E_BAD_VERSION / PD3_E_BAD_LAYOUT, with
// pd3_last_error naming the field and both values.
int validate_segment(const void* base, uint64_t file_size);

// Maps a segment name to its file: "/abs/path" is used as is (memfd via /proc/<pid>/fd/<n>, tests);
// any other name must match [A-Za-z0-9._-]{1,200} and lives in /dev/shm. Returns false if invalid.
bool segment_path(const char* name, std::string* path);

// An open, mapped segment file (RAII: unmaps and closes; the creator may also unlink the name).
class Segment {
 public:
  // Creates /dev/shm/<name> (mode 0600), lays it out and publishes the name atomically, so no
  // attacher ever sees a half-initialised control block. `replace` unlinks an existing segment.
  static int create(const char* name, const pd3_segment_sizes& sizes, bool replace,
                    std::unique_ptr<Segment>* out);
  // Maps an existing segment and validates it (validate_segment).
  static int attach(const char* name, std::unique_ptr<Segment>* out);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  pd3_control* control() const { return reinterpret_cast<pd3_control*>(base_); }
  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Removes the segment's name (the mapping stays valid). Idempotent.
  void unlink_name();

 private:
  Segment(std::string path, int fd, uint8_t* base, uint64_t size)
      : path_(std::move(path)), fd_(fd), base_(base), size_(size) {}

  std::string path_;
  int fd_;
  uint8_t* base_;
  uint64_t size_;
  bool unlinked_ = false;
};

}  // namespace pd3
