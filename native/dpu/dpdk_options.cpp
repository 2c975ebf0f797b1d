// dpdk_options.cpp — the parts of the DPDK backend's options that need no DPDK (both builds).
#include <cstdlib>
#include <string_view>
#include <vector>

#include "dpu/dpdk_mirror.hpp"

namespace pd3 {

bool split_eal_args(const std::string& text, std::vector<std::string>* out, std::string* error) {
  out->clear();
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
    if (j > i) {
      if (out->size() == kDpdkMaxEalArgs) {
        *error = "more than " + std::to_string(kDpdkMaxEalArgs) + " EAL arguments";
        return false;
      }
      out->push_back(text.substr(i, j - i));
    }
    i = j;
  }
  return true;
}

uint32_t largest_framesz(const std::string& text) {
  static constexpr std::string_view kKey = "framesz=";
  uint32_t best = 0;
  for (size_t at = text.find(kKey); at != std::string::npos; at = text.find(kKey, at + 1)) {
    // Only a key of its own: at the start of a devargs item (after ',' or '=' is another key's value).
    if (at > 0 && text[at - 1] != ',' && text[at - 1] != ' ') continue;
    const char* p = text.c_str() + at + kKey.size();
    char* end = nullptr;
    const unsigned long v = std::strtoul(p, &end, 10);
    if (end != p && v <= UINT32_MAX && v > best) best = uint32_t(v);
  }
  return best;
}

}  // namespace pd3
