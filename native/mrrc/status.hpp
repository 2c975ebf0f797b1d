// status.hpp — the return codes of the registration region cache (MRRC) and of its pinning backends.
#pragma once

namespace pd3::mrrc {

// What an MRRC call did. Every function returning one documents which codes it can return.
enum class Status : int {
  kOk = 0,          // done
  kInvalid,         // bad argument: zero length, a range that wraps the address space, bad config
  kTooLarge,        // the range alone is larger than the cache's capacity: it can never be registered
  kNoSpace,         // the capacity is held by regions in use (acquired, not released): release some first
  kPinFailed,       // the backend refused to pin (mlock's errno comes with it, e.g. ENOMEM past RLIMIT_MEMLOCK)
  kUnpinFailed,     // the backend reported an error while unpinning (errno comes with it); the pages are
                    // forgotten by the cache either way
  kUnknownHandle,   // release of a handle that is not held: never acquired, or released already
  kBusy,            // invalidate() of a range that a held handle still uses
};

// A stable lower-case name for logs and messages ("ok", "invalid", ...).
const char* status_name(Status s);

// A status and the errno behind it (0 unless status is kPinFailed or kUnpinFailed).
struct [[nodiscard]] Result {
  Status status = Status::kOk;
  int sys_errno = 0;
  bool ok() const { return status == Status::kOk; }
};

}  // namespace pd3::mrrc
