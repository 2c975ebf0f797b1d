// workload_error.hpp — why the last call of a header-only workload helper (ycsb.hpp, leap.hpp)
// failed on this thread. The helpers keep their own error text so that a program can use them
// whatever PD3 library it links: the C ABI alone (libpd3host), the internal libraries, or none.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

#include "pd3/status.h"

namespace pd3::workloads {

namespace detail {
// One message per thread, as pd3_last_error(): a helper's failure never clobbers another thread's.
inline std::string& last_error_text() {
  thread_local std::string text;
  return text;
}
}  // namespace detail

// "PD3_E_X: message" of the last failed helper call on this thread; "" if none failed yet.
inline const char* last_error() { return detail::last_error_text().c_str(); }

// The name of a status ("PD3_E_INVAL"), from the list in pd3/status.h: no library needed.
inline const char* status_name(int status) {
#define PD3_WORKLOADS_STATUS_NAME(name, value, text) \
  if (status == -(value)) return #name;
  PD3_STATUS_LIST(PD3_WORKLOADS_STATUS_NAME)
#undef PD3_WORKLOADS_STATUS_NAME
  return "PD3_E_UNKNOWN";
}

// Records the reason of a failure and returns `status` (a negative pd3_status), for
// `return fail(PD3_E_INVAL, "...", ...)`.
[[nodiscard]] inline int fail(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
inline int fail(int status, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  detail::last_error_text() = std::string(status_name(status)) + ": " + msg;
  return status;
}

}  // namespace pd3::workloads
