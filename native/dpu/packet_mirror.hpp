// packet_mirror.hpp — the packet mirror on this machine (docs/architecture.md §3): an AF_PACKET socket
// with a TPACKET_V3 receive ring and a BPF filter for the app's TCP port, read by its own thread,
// each frame decoded and handed to per-flow TCP reassembly, which delivers every connection's
// client→server bytes. The kernel gives us a copy of each packet; the app's own path is untouched.
// Design, the loopback rule and limits: docs/mirror.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"
#include "dpu/packet_decode.hpp"
#include "dpu/tcp_reassembly.hpp"

namespace pd3 {

// How a mirror is started.
struct MirrorOptions {
  std::string interface = "lo";      // the interface the app's traffic crosses
  uint32_t ip = 0;                   // the app's IPv4 address, host order; 0 = any address
  uint16_t port = 0;                 // the app's TCP port (required)
  uint32_t block_size = 256u << 10;  // ring block bytes: a power of two, page size to 256 MiB; a
                                     // packet larger than a block is cut (lo's are up to 64 KiB)
  uint32_t block_count = 64;         // ring blocks (2..65536). The kernel hands a block over when
                                     // it is full, or block_timeout_ms after it opened if it holds
                                     // any packet: under steady light traffic the thread may fall
                                     // behind by about block_count * block_timeout_ms before
                                     // packets are lost, however little each block holds
  uint32_t block_timeout_ms = 1;     // 1..1000: also the mirror's latency under light load
  bool kernel_skips_outgoing = true; // ask the kernel not to copy packets this host sends
                                     // (PACKET_IGNORE_OUTGOING); they are skipped here either way
  ReassemblyLimits limits;           // flow table and out-of-order buffering
};

// Counters, written by the mirror thread and read by anyone (see PacketMirror::stats).
struct MirrorStats {
  uint64_t blocks = 0;            // ring blocks processed
  uint64_t frames = 0;            // frames read from the ring (passed the BPF filter)
  uint64_t frames_outgoing = 0;   // skipped: sent by this host (the loopback copy is seen again
                                  // when it is received)
  uint64_t frames_not_tcp = 0;    // not IPv4 TCP (the filter lets none through; counted anyway)
  uint64_t frames_fragment = 0;   // IPv4 fragments (ignored)
  uint64_t frames_malformed = 0;  // truncated inside a header or inconsistent lengths
  uint64_t frames_cut = 0;        // TCP payload cut by the capture (the rest becomes a gap)
  uint64_t ring_errors = 0;       // block or frame offsets outside the block (the block is skipped)
  uint64_t kernel_drops = 0;      // packets the kernel could not put in a full ring
  uint64_t ring_freezes = 0;      // times the ring was full (the kernel's freeze count)
  ReassemblyStats flows;          // the reassembler's counters
};

// Every MirrorStats field outside `flows`, in order.
#define PD3_MIRROR_STATS_FIELDS(X)                                                                   \
  X(blocks) X(frames) X(frames_outgoing) X(frames_not_tcp) X(frames_fragment) X(frames_malformed) \
  X(frames_cut) X(ring_errors) X(kernel_drops) X(ring_freezes)

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
  static int start(const MirrorOptions& options, FlowCallbacks callbacks, std::unique_ptr<PacketMirror>* out);
  // The same with only a deliver callback.
  static int start(const MirrorOptions& options, DeliverFn deliver, std::unique_ptr<PacketMirror>* out);
  ~PacketMirror();  // stop()
  PacketMirror(const PacketMirror&) = delete;
  PacketMirror& operator=(const PacketMirror&) = delete;

  // Stops the thread after it ends every open flow (close callbacks with FlowEnd::kShutdown).
  // Idempotent; not to be called from a callback.
  void stop();

  // A snapshot; each counter is some recent value (they are not read atomically together).
  MirrorStats stats() const;

  LinkType link() const { return link_; }

 private:
  struct Counters;
  struct Ring;

  PacketMirror();
  int open(const MirrorOptions& options);
  void run();
  void process_block(uint8_t* block);
  void handle_frame(const uint8_t* frame, uint32_t snaplen, uint32_t wire_len, uint8_t pkttype);
  void read_kernel_stats();
  void publish();

  MirrorOptions options_;
  LinkType link_ = LinkType::kEthernet;
  UniqueFd sock_;
  UniqueFd wake_;  // eventfd: stop() wakes the thread out of poll()
  std::unique_ptr<Ring> ring_;
  std::unique_ptr<TcpReassembler> flows_;
  std::unique_ptr<Counters> counters_;  // published, read by stats()
  MirrorStats local_;                   // the thread's own counters, published after each block
  uint64_t now_ = 0;                    // the current block's time
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pd3
