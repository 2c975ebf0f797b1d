// capture_thread.cpp — see capture_thread.hpp.
#include "dpu/capture_thread.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace pd3 {
namespace {

constexpr uint64_t kNsPerUs = 1000;

uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The kernel's struct sched_attr as of its first version (SCHED_ATTR_SIZE_VER0): glibc before 2.41
// has no sched_setattr, and <linux/sched/types.h> clashes with <sched.h>.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // SCHED_OTHER (Linux ≥ 6.12): the slice; 0 = the default
  uint64_t sched_deadline;
  uint64_t sched_period;
};
static_assert(sizeof(SchedAttr) == 48);

}  // namespace

uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// Under EEVDF a task's virtual deadline is its slice ahead, so a thread that wakes with a short
// slice preempts one running a long slice: on shared cores the capture thread then runs when its
// packet arrives instead of after the current task's slice.
uint64_t request_slice(uint32_t slice_us) {
  if (slice_us == 0 || sched_getscheduler(0) != SCHED_OTHER) return 0;
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, gettid());
  if (errno != 0) return 0;
  SchedAttr a{};
  a.size = sizeof a;
  a.sched_policy = SCHED_OTHER;
  a.sched_nice = nice;
  a.sched_runtime = uint64_t(slice_us) * kNsPerUs;
  if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return 0;
  SchedAttr got{};
  if (syscall(SYS_sched_getattr, 0, &got, sizeof got, 0) != 0) return 0;
  return got.sched_runtime;
}

}  // namespace pd3
