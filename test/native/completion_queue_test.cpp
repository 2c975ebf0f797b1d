// completion_queue_test.cpp — CompletionQueue, a handle's FIFO of completions: against a deque model
// under random runs of pushes and pops, and bounded when it is never emptied.
#include <deque>
#include <random>

#include "harness.hpp"
#include "host/completion_queue.hpp"

namespace {

pd3_completion completion(uint64_t n) { return pd3_completion{n, -int32_t(n % 7), uint32_t(n), uint16_t(n), 1, 2}; }

}  // namespace

TEST(completion_queue_matches_a_deque_model) {
  pd3::CompletionQueue q;
  std::deque<pd3_completion> model;
  std::mt19937 rng(11);
  uint64_t next = 0;
  pd3_completion out[300];
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 2) {
      const size_t n = rng() % 200;
      std::vector<pd3_completion> run;
      for (size_t i = 0; i < n; ++i) run.push_back(completion(next++));
      if (n == 1) {
        q.push(run[0]);
      } else {
        q.push(run.data(), run.size());
      }
      model.insert(model.end(), run.begin(), run.end());
    } else {
      const size_t max = rng() % 300;
      const size_t got = q.pop(out, max);
      REQUIRE(got == std::min(max, model.size()));
      for (size_t i = 0; i < got; ++i) {
        CHECK_EQ(out[i].user_data, model.front().user_data);
        CHECK_EQ(out[i].status, model.front().status);
        model.pop_front();
      }
    }
    REQUIRE(q.size() == model.size());
    REQUIRE(q.empty() == model.empty());
  }
}

TEST(completion_queue_that_is_never_emptied_stays_bounded) {
  // A poller that takes 256 at a time while 300 arrive between its polls never empties the queue:
  // the backlog grows by 44 a round, but the memory must follow the backlog, not the total.
  pd3::CompletionQueue q;
  pd3_completion out[256];
  std::vector<pd3_completion> run(300);
  uint64_t next = 0, taken = 0;
  for (int round = 0; round < 2000; ++round) {
    for (auto& c : run) c = completion(next++);
    q.push(run.data(), run.size());
    const size_t got = q.pop(out, 256);
    for (size_t i = 0; i < got; ++i) REQUIRE(out[i].user_data == taken + i);
    taken += got;
  }
  CHECK_EQ(q.size(), size_t(2000 * 44));
  CHECK(q.capacity() <= 4 * q.size() + 4096);  // without compaction it would hold all 600,000
}
