// host_replies.cpp — see host_replies.hpp.
#include "dpu/host_replies.hpp"

#include "dpu/request_reader.hpp"
#include "dpu/response_writer.hpp"
#include "pd3/status.h"

namespace pd3 {

PublishCounts HostReplies::publish(pd3_control* control, ResponseBuffer& buffer) {
  PublishCounts counts;
  while (!queue_.empty()) {
    HostReply& r = queue_.front();
    if (request_fenced(control, r.pos)) {
      ++counts.fenced;
    } else {
      const uint8_t* data = r.data != nullptr ? r.data : reinterpret_cast<const uint8_t*>(r.text.data());
      int rc = publish_response(control, r.op_id, r.status, data, r.size);
      int status = r.status;
      if (rc == PD3_E_TOO_BIG) {  // data the response ring can never hold: the host gets the reason
        status = PD3_E_TOO_BIG;
        rc = publish_response(control, r.op_id, status, nullptr, 0);
      }
      if (rc == PD3_E_AGAIN) break;  // the host has not polled: retry on the next loop iteration
      ++counts.published;
      if (status != PD3_OK) ++counts.errors;
    }
    if (r.release != 0) buffer.release(r.release);
    queue_.pop_front();
  }
  return counts;
}

void HostReplies::clear(ResponseBuffer& buffer) {
  for (const HostReply& r : queue_)
    if (r.release != 0) buffer.release(r.release);
  queue_.clear();
}

}  // namespace pd3
