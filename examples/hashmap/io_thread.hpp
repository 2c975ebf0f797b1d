// io_thread.hpp — the `async` mode's dedicated I/O thread (Redy-style): workers hand it the remote
// reads of a whole batch of misses at once; it issues every read on its own handle (many in flight,
// batched by the host library), polls their completions and wakes each worker when its batch is
// complete. Workers still issue their own write-backs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "candidate_read.hpp"
#include "host_channel.hpp"

namespace pd3::hashmap {

// The thread that performs every remote read of the async mode.
class IoThread {
 public:
  // Reads a worker waits for together. The I/O thread never touches a batch after marking it
  // done, so the worker may destroy it as soon as it sees `done`.
  struct Batch {
    std::vector<CandidateRead*> reads;
    std::atomic<uint32_t> done{0};  // 1 once every read's ticket is complete
  };

  // Takes ownership of `host` (a handle of its own). Starts the thread.
  IoThread(pd3_host* host, const SlotLayout& layout, Stripes& stripes, Stats& stats);
  // Finishes the reads it holds, then stops.
  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  // Issues `batch`'s reads and blocks until all are complete (statuses in their tickets).
  void run(Batch* batch);

 private:
  void loop();
  // Issues the reads of newly handed batches.
  void issue(const std::vector<Batch*>& fresh);
  // Marks `b` done (its last access to it) and wakes the workers.
  void finish(Batch* b);

  HostChannel channel_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Batch*> queue_;  // handed over, not yet issued
  bool stopping_ = false;
  std::atomic<uint32_t> completions_{0};  // bumped after batches are marked done; workers wait on it
  std::thread thread_;
};

}  // namespace pd3::hashmap
