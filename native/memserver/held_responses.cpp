// held_responses.cpp — see held_responses.hpp.
#include "memserver/held_responses.hpp"

#include <utility>

namespace pd3 {

void HeldResponses::hold(uint64_t ticket, uint64_t seq, uint32_t records, std::vector<uint8_t> frame) {
  bytes_ += frame.size();
  held_.push_back(Frame{ticket, seq, records, std::move(frame)});
}

}  // namespace pd3
