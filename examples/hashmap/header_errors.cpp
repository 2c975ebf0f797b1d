// header_errors.cpp — pd3::fail for the header-only bench helpers (see header_errors.hpp).
#include "header_errors.hpp"

#include <cstdarg>
#include <cstdio>

#include "common/error.hpp"
#include "pd3/status.h"

namespace {

thread_local std::string t_helper_error;

}  // namespace

namespace pd3 {

int fail(int status, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  t_helper_error = std::string(pd3_status_name(status)) + ": " + msg;
  return status;
}

}  // namespace pd3

namespace pd3::hashmap {

const std::string& helper_error() { return t_helper_error; }

}  // namespace pd3::hashmap
