// segment_cleanup.hpp — a bench program's shared-memory segment leaves no name behind, also when
// the program fails through std::exit before it could close the creating handle.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pd3::bench {

// Unlinks `path` (pd3_host_name of the creating handle) when the process exits through exit() or
// a return from main. After pd3_host_close has unlinked it, this finds nothing (ENOENT, ignored).
// Unlinking a name is safe while other threads still use the mapping: only the name goes.
inline void unlink_segment_at_exit(const char* path) {
  // Constructed before the handler is registered, so destroyed after it ran.
  static std::string registered;
  const bool first = registered.empty();
  registered = path;
  if (first) std::atexit([] { (void)::unlink(registered.c_str()); });
}

}  // namespace pd3::bench
