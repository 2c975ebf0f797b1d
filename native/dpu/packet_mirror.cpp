// packet_mirror.cpp — AF_PACKET setup (TPACKET_V2 or TPACKET_V3 ring) and the capture thread.
//
// Ring protocols (packet(7), the kernel's packet_mmap documentation):
// - TPACKET_V2: the ring is frames of frame_size bytes, block_size / frame_size per block. Each
//   frame starts with a tpacket2_hdr; the kernel copies a packet into the next frame, sets
//   TP_STATUS_USER in tp_status and wakes the socket's waiters — per packet. We read frames in
//   order and hand each back with TP_STATUS_KERNEL.
// - TPACKET_V3: the ring is block_count blocks of block_size bytes, each starting with a
//   tpacket_block_desc. The kernel packs frames into a block and hands it over by setting
//   TP_STATUS_USER in block_status, either when it is full or when block_timeout_ms passed since it
//   was opened; we walk its frames in order, then hand it back with TP_STATUS_KERNEL.
// Either way the units are used round-robin, so the thread only ever looks at the next one.
#include "dpu/packet_mirror.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/error.hpp"
#include "common/net.hpp"
#include "dpu/bpf_filter.hpp"
#include "dpu/capture_thread.hpp"
#include "dpu/frame_feed.hpp"
#include "pd3/status.h"

namespace pd3 {
namespace {

constexpr uint32_t kV3FrameSize = 2048;  // TPACKET_V3 frames are variable; the kernel only checks this
constexpr uint32_t kMaxBlockSize = 256u << 20;
constexpr uint32_t kMaxBlocks = 65536;
constexpr uint32_t kMaxBlockTimeoutMs = 1000;
constexpr uint64_t kNsPerMs = 1000000;
constexpr uint64_t kNsPerUs = 1000;
// The thread wakes at least this often to run the reassembler's timers and read kernel counters.
constexpr uint32_t kMaxTickMs = 50;
// v2: frames handled per take before the timers and counters get their turn.
constexpr uint32_t kFrameBatch = 64;
// v2 frames derived from the MTU leave this much room for the link header (Ethernet and two VLAN
// tags, rounded up): the kernel puts the network header at TPACKET_ALIGN(TPACKET2_HDRLEN + max(link
// header, 16)) from the frame's start.
constexpr uint32_t kLinkRoom = 32;

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

int validate(const MirrorOptions& o) {
  if (o.port == 0) return fail(PD3_E_INVAL, "mirror: port 0");
  if (o.interface.empty() || o.interface.size() >= IFNAMSIZ)
    return fail(PD3_E_INVAL, "mirror: interface name '%s' is empty or longer than %d", o.interface.c_str(),
                IFNAMSIZ - 1);
  if (o.ring != MirrorRing::kV2 && o.ring != MirrorRing::kV3)
    return fail(PD3_E_INVAL, "mirror: ring %u is neither v2 nor v3", unsigned(o.ring));
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  if (!power_of_two(o.block_size) || o.block_size < page || o.block_size > kMaxBlockSize)
    return fail(PD3_E_INVAL, "mirror: block_size %u must be a power of two from %llu to %u", o.block_size,
                (unsigned long long)page, kMaxBlockSize);
  if (o.block_count < 2 || o.block_count > kMaxBlocks)
    return fail(PD3_E_INVAL, "mirror: block_count %u outside 2..%u", o.block_count, kMaxBlocks);
  if (o.block_timeout_ms < 1 || o.block_timeout_ms > kMaxBlockTimeoutMs)
    return fail(PD3_E_INVAL, "mirror: block_timeout_ms %u outside 1..%u", o.block_timeout_ms, kMaxBlockTimeoutMs);
  if (o.frame_size != 0 &&
      (o.frame_size % TPACKET_ALIGNMENT != 0 || o.frame_size < kMirrorMinFrameSize || o.frame_size > o.block_size))
    return fail(PD3_E_INVAL, "mirror: frame_size %u must be 0 or a multiple of %d from %u to block_size (%u)",
                o.frame_size, TPACKET_ALIGNMENT, kMirrorMinFrameSize, o.block_size);
  if (o.spin_us > kMirrorMaxSpinUs)
    return fail(PD3_E_INVAL, "mirror: spin_us %u outside 0..%u", o.spin_us, kMirrorMaxSpinUs);
  if (o.slice_us > kMirrorMaxSliceUs)
    return fail(PD3_E_INVAL, "mirror: slice_us %u outside 0..%u", o.slice_us, kMirrorMaxSliceUs);
  return PD3_OK;
}

// Which decoder a device's frames need, from its ARPHRD_* type.
bool link_type_of(unsigned short hatype, LinkType* out) {
  switch (hatype) {
    case ARPHRD_ETHER:
    case ARPHRD_LOOPBACK:
      *out = LinkType::kEthernet;
      return true;
    case ARPHRD_NONE:
    case ARPHRD_RAWIP:
      *out = LinkType::kRawIp;
      return true;
    default:
      return false;
  }
}

// One writer (the mirror thread): a relaxed load and store instead of a locked read-modify-write.
void set(std::atomic<uint64_t>& counter, uint64_t v) { counter.store(v, std::memory_order_relaxed); }

// The kernel's status word of a frame (v2) or block (v3), shared with the kernel through the map.
// acquire: the kernel writes the frame's bytes before it sets TP_STATUS_USER.
uint32_t load_status(uint32_t& status) { return std::atomic_ref<uint32_t>(status).load(std::memory_order_acquire); }
// release: our reads of the frame happen before the kernel may fill it again.
void give_back(uint32_t& status) { std::atomic_ref<uint32_t>(status).store(TP_STATUS_KERNEL, std::memory_order_release); }

}  // namespace

const char* mirror_ring_name(MirrorRing ring) {
  switch (ring) {
    case MirrorRing::kV2:
      return "v2";
    case MirrorRing::kV3:
      return "v3";
  }
  return "?";
}

bool parse_mirror_ring(std::string_view name, MirrorRing* out) {
  if (name == "v2") {
    *out = MirrorRing::kV2;
  } else if (name == "v3") {
    *out = MirrorRing::kV3;
  } else {
    return false;
  }
  return true;
}

// The published counters. One writer (the mirror thread) and any number of readers (stats(),
// capture_lag()): every access is relaxed because each counter is an independent statistic that
// publishes no other memory, and a reader only needs some recent value of each.
struct PacketMirror::Counters {
#define PD3_MIRROR_COUNTER(name) std::atomic<uint64_t> name{0};
  PD3_MIRROR_STATS_FIELDS(PD3_MIRROR_COUNTER)
  // The reassembler's counters.
  struct Flows {
    PD3_REASSEMBLY_STATS_FIELDS(PD3_MIRROR_COUNTER)
  } flows;
#undef PD3_MIRROR_COUNTER
  LatencyHistogram lag;  // kernel timestamp → frame handed on
};

// The mapped receive ring: v3 blocks, or v2 frames laid out frames_per_block to a block.
struct PacketMirror::Ring {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  uint32_t block_size = 0;
  uint32_t blocks = 0;
  uint32_t frame_size = 0;        // v2
  uint32_t frames_per_block = 0;  // v2
  uint32_t frames = 0;            // v2
  ~Ring() {
    if (base) munmap(base, bytes);
  }
  uint8_t* block(uint32_t i) const { return base + size_t(i) * block_size; }
  uint8_t* frame(uint32_t i) const {
    return block(i / frames_per_block) + size_t(i % frames_per_block) * frame_size;
  }
};

bool packet_capture_permitted() {
  UniqueFd fd(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  return fd.valid() || (errno != EPERM && errno != EACCES);
}

PacketMirror::PacketMirror() : ring_(new Ring), counters_(new Counters) {}

PacketMirror::~PacketMirror() { stop(); }

int PacketMirror::start(const MirrorOptions& options, DeliverFn deliver, std::unique_ptr<PacketMirror>* out) {
  FlowCallbacks callbacks;
  callbacks.deliver = std::move(deliver);
  return start(options, std::move(callbacks), out);
}

int PacketMirror::start(const MirrorOptions& given, FlowCallbacks callbacks, std::unique_ptr<PacketMirror>* out) {
  clear_error();
  MirrorOptions options = given;
  if (options.block_size == 0)
    options.block_size = options.ring == MirrorRing::kV2 ? kMirrorV2BlockSize : kMirrorV3BlockSize;
  int rc = validate(options);
  if (rc != PD3_OK) return rc;
  std::unique_ptr<PacketMirror> m(new PacketMirror());
  ReassemblyOptions ro;
  ro.server_ip = options.ip;
  ro.server_port = options.port;
  ro.limits = options.limits;
  rc = TcpReassembler::create(ro, std::move(callbacks), &m->flows_);
  if (rc != PD3_OK) return rc;
  rc = m->open(options);
  if (rc != PD3_OK) return rc;
  try {
    m->thread_ = std::thread([p = m.get()] { p->run(); });
  } catch (const std::system_error& e) {
    return fail(PD3_E_SYS, "mirror: cannot start its thread: %s", e.what());
  }
  pthread_setname_np(m->thread_.native_handle(), "pd3-mirror");
  *out = std::move(m);
  return PD3_OK;
}

int PacketMirror::open(const MirrorOptions& o) {
  options_ = o;
  const unsigned ifindex = if_nametoindex(o.interface.c_str());
  if (ifindex == 0) return fail(PD3_E_INVAL, "mirror: no network interface named '%s'", o.interface.c_str());

  // Protocol 0: nothing is queued until bind(), by which time the filter and ring are in place.
  sock_.reset(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!sock_.valid()) {
    if (errno == EPERM || errno == EACCES)
      return fail(PD3_E_SYS, "mirror: AF_PACKET capture not permitted (%s): it needs CAP_NET_RAW; use the tee proxy",
                  std::strerror(errno));
    return fail(PD3_E_SYS, "mirror: socket(AF_PACKET): %s", std::strerror(errno));
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, o.interface.c_str(), o.interface.size());
  if (ioctl(sock_.get(), SIOCGIFHWADDR, &ifr) != 0)
    return fail(PD3_E_SYS, "mirror: SIOCGIFHWADDR %s: %s", o.interface.c_str(), std::strerror(errno));
  if (!link_type_of(ifr.ifr_hwaddr.sa_family, &link_))
    return fail(PD3_E_INVAL, "mirror: interface %s has link type %u; Ethernet, loopback and raw IP are supported",
                o.interface.c_str(), unsigned(ifr.ifr_hwaddr.sa_family));

  const int version = o.ring == MirrorRing::kV2 ? TPACKET_V2 : TPACKET_V3;
  if (setsockopt(sock_.get(), SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
    return fail(PD3_E_SYS, "mirror: PACKET_VERSION %s: %s", mirror_ring_name(o.ring), std::strerror(errno));
  int rc = attach_filter(sock_.get(), tcp_port_filter(o.ip, o.port));
  if (rc != PD3_OK) return rc;
  // The kernel need not copy packets this host sends (docs/mirror.md, "Each packet once"); the
  // thread checks the packet type anyway, so a kernel without this option (< 4.20) is fine.
  if (o.kernel_skips_outgoing) {
    const int ignore = 1;
    (void)setsockopt(sock_.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &ignore, sizeof ignore);
  }
  rc = setup_ring(o);
  if (rc != PD3_OK) return rc;

  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = int(ifindex);
  if (bind(sock_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail(PD3_E_SYS, "mirror: bind to %s: %s", o.interface.c_str(), std::strerror(errno));
  wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) return fail(PD3_E_SYS, "mirror: eventfd: %s", std::strerror(errno));
  return PD3_OK;
}

// PACKET_RX_RING and the map. v2 frames hold one packet each, so unless frame_size is given they
// are sized for the interface's largest packet.
int PacketMirror::setup_ring(const MirrorOptions& o) {
  tpacket_req3 req{};  // a tpacket_req with v3's extra fields after it; v2 passes only the prefix
  req.tp_block_size = o.block_size;
  req.tp_block_nr = o.block_count;
  socklen_t req_len = sizeof req;
  if (o.ring == MirrorRing::kV2) {
    uint32_t frame = o.frame_size;
    if (frame == 0) {
      ifreq ifr{};
      std::memcpy(ifr.ifr_name, o.interface.c_str(), o.interface.size());
      if (ioctl(sock_.get(), SIOCGIFMTU, &ifr) != 0)
        return fail(PD3_E_SYS, "mirror: SIOCGIFMTU %s: %s", o.interface.c_str(), std::strerror(errno));
      // Rounded up to TPACKET_ALIGNMENT: the kernel refuses other frame sizes (an MTU of 1500 is not one).
      const uint64_t want = TPACKET_ALIGN(TPACKET_ALIGN(TPACKET2_HDRLEN + kLinkRoom) + uint64_t(std::max(ifr.ifr_mtu, 576)));
      if (want > o.block_size)
        return fail(PD3_E_INVAL,
                    "mirror: a v2 frame for %s's MTU %d needs %llu bytes, more than block_size %u; raise block_size",
                    o.interface.c_str(), ifr.ifr_mtu, (unsigned long long)want, o.block_size);
      frame = uint32_t(want);
    }
    ring_->frame_size = frame;
    ring_->frames_per_block = o.block_size / frame;
    ring_->frames = ring_->frames_per_block * o.block_count;
    req.tp_frame_size = frame;
    req.tp_frame_nr = ring_->frames;
    req_len = sizeof(tpacket_req);
  } else {
    req.tp_frame_size = kV3FrameSize;
    req.tp_frame_nr = (o.block_size / kV3FrameSize) * o.block_count;
    req.tp_retire_blk_tov = o.block_timeout_ms;
  }
  if (setsockopt(sock_.get(), SOL_PACKET, PACKET_RX_RING, &req, req_len) != 0) {
    return fail(errno == ENOMEM ? PD3_E_NOMEM : PD3_E_SYS, "mirror: PACKET_RX_RING (%s) %u x %u bytes: %s",
                mirror_ring_name(o.ring), o.block_count, o.block_size, std::strerror(errno));
  }
  ring_->bytes = size_t(o.block_size) * o.block_count;
  void* p = mmap(nullptr, ring_->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, sock_.get(), 0);
  if (p == MAP_FAILED) {
    ring_->bytes = 0;
    return fail(errno == ENOMEM ? PD3_E_NOMEM : PD3_E_SYS, "mirror: mmap of the ring: %s", std::strerror(errno));
  }
  ring_->base = static_cast<uint8_t*>(p);
  ring_->block_size = o.block_size;
  ring_->blocks = o.block_count;
  return PD3_OK;
}

uint32_t PacketMirror::frame_size() const { return options_.ring == MirrorRing::kV2 ? ring_->frame_size : 0; }

void PacketMirror::stop() {
  if (!thread_.joinable()) return;
  // relaxed: the flag only ends the loop; join() orders everything the thread did before us.
  stop_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof one);
  thread_.join();
}

// The loop: take what the ring holds; when it is empty, spin for spin_us once after any work, then
// sleep in poll() until the kernel or stop() wakes us (or the tick passes).
void PacketMirror::run() {
  const uint32_t tick_ms = std::clamp(options_.limits.hole_timeout_ms / 4, 1u, kMaxTickMs);
  const uint64_t spin_ns = uint64_t(options_.spin_us) * kNsPerUs;
  uint64_t next_tick = 0;
  bool may_spin = false;  // work was done since the last spin
  local_.slice_ns = request_slice(options_.slice_us);
  // relaxed: see stop().
  while (!stop_.load(std::memory_order_relaxed)) {
    now_ = now_ns();
    if (take()) {
      may_spin = spin_ns > 0;
    } else if (may_spin) {
      may_spin = false;
      ++local_.spins;
      if (spin(spin_ns)) ++local_.spin_hits;
    } else {
      wait_for_ring(tick_ms);
    }
    if (now_ >= next_tick) {
      flows_->expire(now_);
      read_kernel_stats();
      local_.cpu_ns = thread_cpu_ns();
      next_tick = now_ + tick_ms * kNsPerMs;
    }
    publish();
  }
  flows_->close_all();
  local_.cpu_ns = thread_cpu_ns();
  publish();
}

bool PacketMirror::ring_ready() const {
  uint8_t* unit = options_.ring == MirrorRing::kV2 ? ring_->frame(next_) : ring_->block(next_);
  uint32_t& status = options_.ring == MirrorRing::kV2 ? reinterpret_cast<tpacket2_hdr*>(unit)->tp_status
                                                      : reinterpret_cast<tpacket_block_desc*>(unit)->hdr.bh1.block_status;
  return (load_status(status) & TP_STATUS_USER) != 0;
}

bool PacketMirror::take() { return options_.ring == MirrorRing::kV2 ? take_frames() : take_block(); }

// v2: up to kFrameBatch frames, in ring order.
bool PacketMirror::take_frames() {
  const uint32_t size = ring_->frame_size;
  uint32_t n = 0;
  for (; n < kFrameBatch; ++n) {
    uint8_t* frame = ring_->frame(next_);
    auto* hdr = reinterpret_cast<tpacket2_hdr*>(frame);
    if (!(load_status(hdr->tp_status) & TP_STATUS_USER)) break;
    // Offsets come from the kernel; check them anyway so a bad one cannot send us outside the frame.
    if (hdr->tp_mac < TPACKET2_HDRLEN || hdr->tp_mac > size || hdr->tp_snaplen > size - hdr->tp_mac) {
      ++local_.ring_errors;
    } else {
      const auto* sll = reinterpret_cast<const sockaddr_ll*>(frame + TPACKET_ALIGN(sizeof(tpacket2_hdr)));
      handle_frame(frame + hdr->tp_mac, hdr->tp_snaplen, hdr->tp_len, sll->sll_pkttype,
                   uint64_t(hdr->tp_sec) * 1000000000ull + hdr->tp_nsec);
    }
    give_back(hdr->tp_status);
    next_ = next_ + 1 == ring_->frames ? 0 : next_ + 1;
  }
  return n > 0;
}

// v3: the next block, if the kernel handed it over.
bool PacketMirror::take_block() {
  uint8_t* block = ring_->block(next_);
  auto& status = reinterpret_cast<tpacket_block_desc*>(block)->hdr.bh1.block_status;
  if (!(load_status(status) & TP_STATUS_USER)) return false;
  process_block(block);
  give_back(status);
  next_ = next_ + 1 == ring_->blocks ? 0 : next_ + 1;
  ++local_.blocks;
  return true;
}

// Busy-checks the ring for up to spin_ns; true if a frame (v2) or block (v3) arrived meanwhile.
bool PacketMirror::spin(uint64_t spin_ns) {
  const uint64_t until = now_ns() + spin_ns;
  // relaxed: see stop().
  while (!stop_.load(std::memory_order_relaxed)) {
    if (ring_ready()) return true;
    cpu_relax();
    if (now_ns() >= until) return false;
  }
  return false;
}

// Sleeps until the socket is readable (the kernel filled a frame or retired a block), stop()
// writes the eventfd, or tick_ms pass.
void PacketMirror::wait_for_ring(uint32_t tick_ms) {
  pollfd fds[2] = {{sock_.get(), POLLIN | POLLERR, 0}, {wake_.get(), POLLIN, 0}};
  ++local_.polls;
  if (poll(fds, 2, int(tick_ms)) > 0 && (fds[0].revents & POLLIN)) ++local_.wakeups;
}

void PacketMirror::process_block(uint8_t* block) {
  const auto* desc = reinterpret_cast<const tpacket_block_desc*>(block);
  const uint32_t size = ring_->block_size;
  const uint32_t frames = desc->hdr.bh1.num_pkts;
  uint32_t off = desc->hdr.bh1.offset_to_first_pkt;
  for (uint32_t i = 0; i < frames; ++i) {
    // Offsets come from the kernel; check them anyway so a bad one cannot send us outside the block.
    if (off < sizeof(tpacket_block_desc) || off > size || size - off < TPACKET3_HDRLEN) {
      ++local_.ring_errors;
      return;
    }
    const auto* hdr = reinterpret_cast<const tpacket3_hdr*>(block + off);
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(block + off + TPACKET_ALIGN(sizeof(tpacket3_hdr)));
    if (hdr->tp_mac > size - off || hdr->tp_snaplen > size - off - hdr->tp_mac) {
      ++local_.ring_errors;
      return;
    }
    handle_frame(block + off + hdr->tp_mac, hdr->tp_snaplen, hdr->tp_len, sll->sll_pkttype,
                 uint64_t(hdr->tp_sec) * 1000000000ull + hdr->tp_nsec);
    if (hdr->tp_next_offset == 0) {
      if (i + 1 < frames) ++local_.ring_errors;
      return;
    }
    off += hdr->tp_next_offset;
  }
}

// The loopback rule (docs/mirror.md): a packet this host sends is seen once as PACKET_OUTGOING when
// it leaves and, on lo, once more as PACKET_HOST when it arrives. Only received copies count, which
// on a real NIC are exactly the packets clients send to the app (PACKET_HOST, or PACKET_OTHERHOST
// on a port that mirrors another host's traffic). Every frame handed on has its capture lag
// recorded first: `stamp_ns` is the kernel's CLOCK_REALTIME timestamp of the packet.
void PacketMirror::handle_frame(const uint8_t* frame, uint32_t snaplen, uint32_t wire_len, uint8_t pkttype,
                                uint64_t stamp_ns) {
  ++local_.frames;
  if (pkttype == PACKET_OUTGOING) {
    ++local_.frames_outgoing;
    return;
  }
  const uint64_t handed = realtime_ns();
  if (stamp_ns == 0 || stamp_ns > handed) {
    ++local_.lag_unmeasured;
  } else {
    counters_->lag.record(handed - stamp_ns);
  }
  switch (feed_frame(link_, frame, snaplen, wire_len, options_.port, *flows_, now_)) {
    case FeedResult::kSegment:
      break;
    case FeedResult::kCut:  // server→client frames are cut on purpose by the filter; not counted
      ++local_.frames_cut;
      break;
    case FeedResult::kNotTcp:
      ++local_.frames_not_tcp;
      break;
    case FeedResult::kFragment:
      ++local_.frames_fragment;
      break;
    case FeedResult::kMalformed:
      ++local_.frames_malformed;
      break;
  }
}

// PACKET_STATISTICS returns the counts since the last call (reading resets them): accumulate. v2
// fills a tpacket_stats, the prefix of tpacket_stats_v3 (no freeze count).
void PacketMirror::read_kernel_stats() {
  tpacket_stats_v3 st{};
  socklen_t len = sizeof st;
  if (getsockopt(sock_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) return;
  local_.kernel_drops += st.tp_drops;
  local_.ring_freezes += st.tp_freeze_q_cnt;
}

void PacketMirror::publish() {
  Counters& c = *counters_;
  const ReassemblyStats& f = flows_->stats();
#define PD3_PUBLISH(name) set(c.name, local_.name);
  PD3_MIRROR_STATS_FIELDS(PD3_PUBLISH)
#undef PD3_PUBLISH
#define PD3_PUBLISH_FLOWS(name) set(c.flows.name, f.name);
  PD3_REASSEMBLY_STATS_FIELDS(PD3_PUBLISH_FLOWS)
#undef PD3_PUBLISH_FLOWS
}

MirrorStats PacketMirror::stats() const {
  MirrorStats s;
  const Counters& c = *counters_;
  // relaxed: see Counters.
#define PD3_LOAD(name) s.name = c.name.load(std::memory_order_relaxed);
  PD3_MIRROR_STATS_FIELDS(PD3_LOAD)
#undef PD3_LOAD
#define PD3_LOAD_FLOWS(name) s.flows.name = c.flows.name.load(std::memory_order_relaxed);
  PD3_REASSEMBLY_STATS_FIELDS(PD3_LOAD_FLOWS)
#undef PD3_LOAD_FLOWS
  return s;
}

LatencyHistogram::Snapshot PacketMirror::capture_lag() const { return counters_->lag.snapshot(); }

}  // namespace pd3
