// status.cpp — text for pd3_status codes and the thread-local "last error" message.
#include "pd3/status.h"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "common/error.hpp"

namespace {

// One row of the status table generated from PD3_STATUS_LIST.
struct StatusText {
  int magnitude;
  const char* name;
  const char* text;
};

constexpr StatusText kStatusTable[] = {
#define PD3_STATUS_ROW(name, value, text) {value, #name, text},
    PD3_STATUS_LIST(PD3_STATUS_ROW)
#undef PD3_STATUS_ROW
};

const StatusText* find(int status) {
  const int magnitude = status < 0 ? -status : status;
  for (const auto& row : kStatusTable)
    if (row.magnitude == magnitude) return &row;
  return nullptr;
}

thread_local std::string t_last_error;

}  // namespace

extern "C" const char* pd3_status_str(int status) {
  const StatusText* row = find(status);
  return row ? row->text : "unknown status";
}

extern "C" const char* pd3_status_name(int status) {
  const StatusText* row = find(status);
  return row ? row->name : "PD3_E_UNKNOWN";
}

extern "C" const char* pd3_last_error(void) { return t_last_error.c_str(); }

namespace pd3 {

int fail(int status, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t_last_error = std::string(pd3_status_name(status)) + ": " + buf;
  return status;
}

void clear_error() { t_last_error.clear(); }

}  // namespace pd3
