// access_sink.hpp — collects the accesses of one parse_request call, with the ABI's rule for a full
// output array (pd3/parser.h): a request whose keys no longer fit is left for the next call, unless
// it is the call's first request with keys, which is cut instead (its remaining keys are dropped).
#pragma once

#include <cstddef>
#include <cstdint>

#include "pd3/parser.h"

namespace pd3 {

// The output array of one parse_request call plus where the current request's accesses begin.
class AccessSink {
 public:
  AccessSink(pd3_access* out, uint32_t max) : out_(out), max_(max) {}

  // Marks the start of a request: drop_request() rolls back to here.
  void begin_request() {
    request_start_ = n_;
    deferred_ = false;
  }

  // Appends one key. When the array is full the request is deferred (earlier requests hold
  // accesses, so a later call has room for it) or, when it is the first, cut.
  void add(const uint8_t* key, size_t key_len, uint32_t op) {
    if (n_ < max_) {
      out_[n_++] = pd3_access{key, uint32_t(key_len), op};
    } else if (request_start_ > 0) {
      deferred_ = true;
    }
  }

  // True when the current request did not fit and must be parsed again by the next call.
  bool deferred() const { return deferred_; }
  // Forgets the current request's accesses (it was incomplete, malformed or deferred).
  void drop_request() { n_ = request_start_; }
  // True when no further request should be started in this call.
  bool full() const { return max_ > 0 && n_ == max_; }
  uint32_t count() const { return n_; }

 private:
  pd3_access* out_;
  uint32_t max_;
  uint32_t n_ = 0;
  uint32_t request_start_ = 0;
  bool deferred_ = false;
};

}  // namespace pd3
