// name_chars.hpp — the characters PD3 allows in names that become file names or keys (segment,
// tenant): ASCII letters, digits, '.', '_' and '-'.
#pragma once

namespace pd3 {

// True for [A-Za-z0-9._-].
constexpr bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace pd3
