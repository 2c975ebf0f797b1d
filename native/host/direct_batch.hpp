// direct_batch.hpp — a handle's direct-mode requests staged for the direct path (direct_submit.cpp).
#pragma once

#include <vector>

#include "host/direct_path.hpp"
#include "host/request_batch.hpp"

namespace pd3 {

// A handle's direct requests staged for the direct path, and the scratch to hand them over.
// Not thread-safe: its handle's issue_mu guards it.
struct DirectBatch {
  RequestBatch staged;
  std::vector<DirectPath::Request> requests;  // scratch: staged, as DirectPath::submit_all takes them
  std::vector<int> statuses;                  // scratch: their statuses
};

}  // namespace pd3
