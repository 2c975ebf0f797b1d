// packet_mirror.hpp — the packet mirror on this machine (docs/architecture.md §3): an AF_PACKET socket
// with a receive ring (TPACKET_V2, a frame per packet and a wake-up per packet, or TPACKET_V3,
// blocks handed over when full or on a timer) and a BPF filter for the app's TCP port, read by its
// own thread, each frame decoded and handed to per-flow TCP reassembly, which delivers every
// connection's client→server bytes. The kernel gives us a copy of each packet; the app's own path
// is untouched. Design, the two rings' latency, the loopback rule and limits: docs/mirror.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/latency_histogram.hpp"
#include "common/unique_fd.hpp"
#include "dpu/packet_decode.hpp"
#include "dpu/tcp_reassembly.hpp"

namespace pd3 {

// Which AF_PACKET receive ring the mirror reads (docs/mirror.md, "Capture").
enum class MirrorRing : uint8_t {
  kV2,  // TPACKET_V2: a fixed-size frame per packet; the kernel wakes the thread for each packet
  kV3,  // TPACKET_V3: blocks of packed frames, handed over when full or block_timeout_ms after
        // they opened (≥ 1 ms: the latency of a lone packet)
};

// "v2" / "v3".
const char* mirror_ring_name(MirrorRing ring);
// The ring named "v2" or "v3"; false for anything else.
[[nodiscard]] bool parse_mirror_ring(std::string_view name, MirrorRing* out);

// Bounds of the options (checked by PacketMirror::start).
inline constexpr uint32_t kMirrorMaxSpinUs = 1000;
inline constexpr uint32_t kMirrorMaxSliceUs = 100000;
inline constexpr uint32_t kMirrorMinFrameSize = 256;
inline constexpr uint32_t kMirrorV3BlockSize = 256u << 10;  // block_size 0 with v3
inline constexpr uint32_t kMirrorV2BlockSize = 1u << 20;    // block_size 0 with v2

// How a mirror is started.
struct MirrorOptions {
  std::string interface = "lo";      // the interface the app's traffic crosses
  uint32_t ip = 0;                   // the app's IPv4 address, host order; 0 = any address
  uint16_t port = 0;                 // the app's TCP port (required)
  MirrorRing ring = MirrorRing::kV2; // the receive ring (see MirrorRing)
  uint32_t block_size = 0;           // ring block bytes: a power of two, page size to 256 MiB; 0:
                                     // 256 KiB for v3, 1 MiB for v2. v3: a packet larger than a
                                     // block is cut (lo's are up to 64 KiB); v2: each block holds
                                     // block_size / frame_size frames, so the default ring of 64
                                     // MiB holds 960 packets on lo (64 KiB frames), ~40,000 at
                                     // MTU 1500
  uint32_t block_count = 64;         // ring blocks (2..65536). v3: the kernel hands a block over
                                     // when it is full, or block_timeout_ms after it opened if it
                                     // holds any packet: under steady light traffic the thread may
                                     // fall behind by about block_count * block_timeout_ms before
                                     // packets are lost, however little each block holds
  uint32_t block_timeout_ms = 1;     // v3: 1..1000, also the mirror's latency under light load
  uint32_t frame_size = 0;           // v2: bytes per frame, a multiple of 16 from
                                     // kMirrorMinFrameSize to block_size; a packet larger than a
                                     // frame (less its ~80-byte header) is cut. 0: enough for the
                                     // interface's MTU (lo: 64 KiB + 96)
  uint32_t spin_us = 0;              // 0..kMirrorMaxSpinUs: after it handled packets, the thread
                                     // checks the ring this long before it sleeps in poll(); saves
                                     // the wake-up of a packet that follows soon, costs CPU
  uint32_t slice_us = 100;           // 0..kMirrorMaxSliceUs: the scheduler slice the thread asks
                                     // for (sched_setattr, Linux ≥ 6.12; the kernel raises it to
                                     // at least 100 µs): a short slice lets its wake-ups preempt
                                     // busy threads on shared cores. 0: the kernel's default slice
  bool kernel_skips_outgoing = true; // ask the kernel not to copy packets this host sends
                                     // (PACKET_IGNORE_OUTGOING); they are skipped here either way
  ReassemblyLimits limits;           // flow table and out-of-order buffering
};

// Counters, written by the mirror thread and read by anyone (see PacketMirror::stats).
struct MirrorStats {
  uint64_t blocks = 0;            // v3 ring blocks processed (0 with v2)
  uint64_t frames = 0;            // frames read from the ring (passed the BPF filter)
  uint64_t frames_outgoing = 0;   // skipped: sent by this host (the loopback copy is seen again
                                  // when it is received)
  uint64_t frames_not_tcp = 0;    // not IPv4 TCP (the filter lets none through; counted anyway)
  uint64_t frames_fragment = 0;   // IPv4 fragments (ignored)
  uint64_t frames_malformed = 0;  // truncated inside a header or inconsistent lengths
  uint64_t frames_cut = 0;        // TCP payload cut by the capture (the rest becomes a gap)
  uint64_t ring_errors = 0;       // kernel offsets outside their block (v3: the rest of the block is
                                  // skipped) or frame (v2: the frame is skipped)
  uint64_t kernel_drops = 0;      // packets the kernel could not put in a full ring
  uint64_t ring_freezes = 0;      // times the ring was full (the kernel's freeze count, v3)
  uint64_t polls = 0;             // poll() calls: the thread found the ring empty and slept
  uint64_t wakeups = 0;           // of those, the ones the kernel ended because a packet arrived
  uint64_t spins = 0;             // times the thread spun on an empty ring (spin_us > 0)
  uint64_t spin_hits = 0;         // of those, the ones a packet ended before spin_us (no sleep)
  uint64_t lag_unmeasured = 0;    // frames whose capture lag was not recorded: no kernel timestamp,
                                  // or one ahead of the clock (CLOCK_REALTIME stepped back)
  uint64_t cpu_ns = 0;            // CPU time of the mirror thread (read every tick, ≤ 50 ms old)
  uint64_t slice_ns = 0;          // the scheduler slice the thread was given (0: the kernel's
                                  // default: slice_us 0, a kernel before 6.12, or not SCHED_OTHER)
  ReassemblyStats flows;          // the reassembler's counters
};

// Every MirrorStats field outside `flows`, in order.
#define PD3_MIRROR_STATS_FIELDS(X)                                                                   \
  X(blocks) X(frames) X(frames_outgoing) X(frames_not_tcp) X(frames_fragment) X(frames_malformed) \
  X(frames_cut) X(ring_errors) X(kernel_drops) X(ring_freezes) X(polls) X(wakeups) X(spins)       \
  X(spin_hits) X(lag_unmeasured) X(cpu_ns) X(slice_ns)

// True when this process may open AF_PACKET sockets (CAP_NET_RAW). When it may not, start()
// fails with PD3_E_SYS and the caller falls back to the tee proxy.
bool packet_capture_permitted();

// The capture thread and everything it owns.
class PacketMirror {
 public:
  // Opens and binds the socket, maps the ring, and starts the thread: every packet that crosses
  // the interface after this returns is seen. Callbacks run on the mirror thread (deliver's data
  // points into the ring and is valid only during the call). Returns PD3_OK, PD3_E_INVAL (options,
  // unknown interface or unsupported link type), PD3_E_NOMEM (the ring) or PD3_E_SYS (AF_PACKET not
  // permitted, or another system call failed); pd3_last_error says which.
  [[nodiscard]] static int start(const MirrorOptions& options, FlowCallbacks callbacks,
                                 std::unique_ptr<PacketMirror>* out);
  // The same with only a deliver callback.
  [[nodiscard]] static int start(const MirrorOptions& options, DeliverFn deliver, std::unique_ptr<PacketMirror>* out);
  ~PacketMirror();  // stop()
  PacketMirror(const PacketMirror&) = delete;
  PacketMirror& operator=(const PacketMirror&) = delete;

  // Stops the thread after it ends every open flow (close callbacks with FlowEnd::kShutdown).
  // Idempotent; not to be called from a callback.
  void stop();

  // A snapshot; each counter is some recent value (they are not read atomically together).
  MirrorStats stats() const;

  // Capture lag of every frame handed on (not skipped as outgoing): the kernel's timestamp of the
  // packet (CLOCK_REALTIME, taken when the packet socket got it) → the moment the thread hands
  // the frame to the decoder and reassembler. From any thread, like stats().
  LatencyHistogram::Snapshot capture_lag() const;

  LinkType link() const { return link_; }
  MirrorRing ring() const { return options_.ring; }
  // v2: the frame size in use (frame_size, or the one derived from the MTU); v3: 0.
  uint32_t frame_size() const;

 private:
  struct Counters;
  struct Ring;

  PacketMirror();
  [[nodiscard]] int open(const MirrorOptions& options);
  [[nodiscard]] int setup_ring(const MirrorOptions& options);
  void run();
  [[nodiscard]] bool ring_ready() const;
  [[nodiscard]] bool take();
  [[nodiscard]] bool take_frames();
  [[nodiscard]] bool take_block();
  [[nodiscard]] bool spin(uint64_t spin_ns);
  void wait_for_ring(uint32_t tick_ms);
  void process_block(uint8_t* block);
  void handle_frame(const uint8_t* frame, uint32_t snaplen, uint32_t wire_len, uint8_t pkttype, uint64_t stamp_ns);
  void read_kernel_stats();
  void publish();

  MirrorOptions options_;
  LinkType link_ = LinkType::kEthernet;
  UniqueFd sock_;
  UniqueFd wake_;  // eventfd: stop() wakes the thread out of poll()
  std::unique_ptr<Ring> ring_;
  std::unique_ptr<TcpReassembler> flows_;
  std::unique_ptr<Counters> counters_;  // published, read by stats() and capture_lag()
  MirrorStats local_;                   // the thread's own counters, published after each take
  uint64_t now_ = 0;                    // CLOCK_MONOTONIC of the current take (reassembly timers)
  uint32_t next_ = 0;                   // v2: the next frame; v3: the next block
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pd3
