// error.hpp — record why a call failed, for pd3_last_error(), and return the status in one step.
#pragma once

namespace pd3 {

// Stores "PD3_E_X: <formatted message>" as this thread's last error and returns `status`.
[[gnu::format(printf, 2, 3)]] int fail(int status, const char* fmt, ...);

// Clears this thread's last error (called at the start of calls that may set it).
void clear_error();

}  // namespace pd3
