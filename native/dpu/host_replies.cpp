// host_replies.cpp — see host_replies.hpp.
#include "dpu/host_replies.hpp"

#include "pd3/status.h"

namespace pd3 {

PublishCounts HostReplies::publish(ResponseWriter& writer, uint64_t fence, ResponseBuffer& buffer) {
  PublishCounts counts;
  while (!queue_.empty()) {
    HostReply& r = queue_.front();
    if (r.pos < fence) {
      ++counts.fenced;
    } else {
      const uint8_t* data = r.data != nullptr ? r.data : reinterpret_cast<const uint8_t*>(r.text.data());
      int rc = writer.add(r.op_id, r.status, data, r.size);
      int status = r.status;
      if (rc == PD3_E_TOO_BIG) {  // data the response ring can never hold: the host gets the reason
        status = PD3_E_TOO_BIG;
        rc = writer.add(r.op_id, status, nullptr, 0);
      }
      if (rc == PD3_E_AGAIN) break;  // the host has not polled: retry on the next loop iteration
      ++counts.published;
      if (status != PD3_OK) ++counts.errors;
    }
    if (r.release != 0) buffer.release(r.release);
    queue_.pop_front();
  }
  writer.flush();
  return counts;
}

void HostReplies::clear(ResponseBuffer& buffer) {
  for (const HostReply& r : queue_)
    if (r.release != 0) buffer.release(r.release);
  queue_.clear();
}

}  // namespace pd3
