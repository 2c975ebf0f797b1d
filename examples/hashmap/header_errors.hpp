// header_errors.hpp — the reason the last bench helper call (leap.hpp, ycsb.hpp) failed on this
// thread. Those header-only helpers report bad options through pd3::fail, which lives in the
// project's internal library; this example links only libpd3host (whose copy is hidden), so
// header_errors.cpp defines pd3::fail for them and keeps the message here.
#pragma once

#include <string>

namespace pd3::hashmap {

// "PD3_E_X: message" of the last pd3::fail on this thread.
const std::string& helper_error();

}  // namespace pd3::hashmap
