// tier_io.hpp — the SSD tier's file I/O: page reads and write-backs between DRAM frames and the
// regions' backing files, submitted by the event-loop thread and completed in the background; a
// completion makes completion_fd() (an eventfd) readable so the loop wakes up and reaps it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pd3::tier {

// The backends (--tier-io).
enum class IoKind : uint8_t { kUring, kThreads };

// One transfer of a whole buffer at a file offset, or an fdatasync of the file (kSync: buf, len
// and offset unused).
struct IoOp {
  enum class Kind : uint8_t { kRead, kWrite, kSync };
  Kind kind = Kind::kRead;
  int fd = -1;              // kept open by the submitter until the completion is reaped
  uint8_t* buf = nullptr;   // kept alive and untouched by the submitter until then
  uint32_t len = 0;
  uint64_t offset = 0;
  uint64_t tag = 0;         // returned with the completion
};

// The outcome of one IoOp: all `len` bytes moved (result == len; 0 for kSync) or -errno (a short
// transfer at the end of the file is reported as -EIO: backing files always cover every page).
struct IoCompletion {
  uint64_t tag = 0;
  int64_t result = 0;
};

// Moves bytes between frames and files without blocking its caller. Single submitter: submit() and
// reap() are called from one thread only (the tier's owner).
class TierIo {
 public:
  virtual ~TierIo() = default;
  virtual IoKind kind() const = 0;
  // Queues `op`. Never blocks on the disk; ops beyond what the backend has room for wait in a queue
  // of its own. Returns PD3_OK or PD3_E_NOMEM.
  [[nodiscard]] virtual int submit(const IoOp& op) = 0;
  // Appends the completions that arrived since the last call to *out and clears completion_fd().
  virtual void reap(std::vector<IoCompletion>* out) = 0;
  // Readable (EPOLLIN) while completions wait to be reaped.
  virtual int completion_fd() const = 0;
};

// Decides the fate of an op before it runs: 0 lets it run, a negative errno fails it with that
// error (tests inject faults with it).
using IoFault = std::function<int(const IoOp& op)>;

// A pool of `threads` threads doing pread/pwrite. Returns PD3_OK or PD3_E_SYS.
[[nodiscard]] int make_thread_io(uint32_t threads, IoFault fault, std::unique_ptr<TierIo>* out);
// io_uring through raw syscalls, `entries` submission slots (a power of two). Returns PD3_OK,
// PD3_E_UNAVAILABLE (the kernel refuses io_uring: too old, disabled, or a seccomp filter) or PD3_E_SYS.
[[nodiscard]] int make_uring_io(uint32_t entries, std::unique_ptr<TierIo>* out);
// The backend of `kind` with its default size.
[[nodiscard]] int make_tier_io(IoKind kind, std::unique_ptr<TierIo>* out);

// "uring", "threads"; parse_io_kind returns false for any other name.
const char* io_kind_name(IoKind kind);
bool parse_io_kind(const std::string& name, IoKind* out);

}  // namespace pd3::tier
