// util.hpp — helpers shared by the native tests: unique segment names and a scoped host handle.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

#include "pd3/host.h"

namespace pd3test {

// A segment name no other test or process uses.
inline std::string unique_name(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("pd3-test-") + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

// Creates a host segment for the test's lifetime.
struct ScopedHost {
  pd3_host* h = nullptr;
  std::string name;
  int rc;
  explicit ScopedHost(const char* tag, pd3_segment_sizes sizes = {}) : name(unique_name(tag)) {
    pd3_host_config cfg{};
    cfg.name = name.c_str();
    cfg.sizes = sizes;
    rc = pd3_host_create(&cfg, &h);
  }
  ~ScopedHost() { pd3_host_close(h); }
  pd3_control* control() const { return const_cast<pd3_control*>(pd3_host_control(h)); }
};

}  // namespace pd3test
