// capture_thread.hpp — what every capture backend's own thread needs (AF_PACKET and DPDK alike):
// the clocks packets are stamped with, the thread's CPU time, a spin-wait hint and the scheduler
// slice request that lets a waking capture thread preempt busy threads on shared cores.
#pragma once

#include <cstdint>

namespace pd3 {

// CLOCK_REALTIME in ns: the clock the kernel stamps captured packets with (packet(7)).
uint64_t realtime_ns();

// CPU time the calling thread has used, in ns.
uint64_t thread_cpu_ns();

// Asks the scheduler for a slice of slice_us for the calling thread (SCHED_OTHER only; its nice
// value is kept). Returns the slice the kernel reports, 0 when it was not changed (slice_us 0,
// another policy, or a kernel before 6.12).
uint64_t request_slice(uint32_t slice_us);

// Tells the core this is a spin-wait (fewer wasted cycles, and the sibling hyperthread runs).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace pd3
