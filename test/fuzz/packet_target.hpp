// packet_target.hpp — one fuzz input → captured frames through decode_frame and a TcpReassembler,
// with their properties checked. Shared by the libFuzzer entry point (test/fuzz/packet_fuzzer.cpp)
// and the seeded in-suite run (test/native/packet_decode_test.cpp). A violated property aborts.
//
// Input format: byte 0 picks the link type and the reassembler's limits; then frames, each as a
// 3-byte header (length low, length high, clock step) and up to that many bytes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "dpu/packet_decode.hpp"
#include "dpu/tcp_reassembly.hpp"
#include "fuzz_assert.hpp"
#include "pd3/status.h"

namespace pd3fuzz {

inline constexpr uint16_t kFuzzServerPort = 6379;
inline constexpr uint32_t kFuzzServerIp = 0x7F000001;
inline constexpr size_t kMaxFuzzFrame = 16384;
inline constexpr size_t kFrameHeader = 3;

// One reusable buffer whose usable bytes end at a PROT_NONE page: a frame copied in ends exactly
// there, so a decoder or a delivery reading one byte past it faults even without a sanitizer.
class GuardedFrame {
 public:
  GuardedFrame() {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    span_ = (kMaxFuzzFrame + page_ - 1) / page_ * page_ + page_;
    base_ = static_cast<uint8_t*>(mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    PD3_FUZZ_ASSERT(base_ != MAP_FAILED);
    PD3_FUZZ_ASSERT(mprotect(base_ + span_ - page_, page_, PROT_NONE) == 0);
  }
  ~GuardedFrame() { munmap(base_, span_); }
  GuardedFrame(const GuardedFrame&) = delete;
  GuardedFrame& operator=(const GuardedFrame&) = delete;

  // Copies n ≤ kMaxFuzzFrame bytes so that they end at the guard page; returns where they start.
  const uint8_t* place(const uint8_t* p, size_t n) {
    uint8_t* at = base_ + span_ - page_ - n;
    if (n) std::memcpy(at, p, n);
    return at;
  }
  const uint8_t* end() const { return base_ + span_ - page_; }

 private:
  uint8_t* base_;
  size_t span_;
  size_t page_;
};

// What a run saw, for the seeded suite's figures.
struct PacketRunResult {
  uint64_t frames = 0;
  uint64_t segments = 0;     // frames that decoded as TCP
  uint64_t delivered = 0;    // bytes the reassembler delivered
  uint64_t gaps = 0;
};

// Runs one input. Properties: decoded payloads lie inside the captured frame; every delivery is
// non-empty and readable (each byte is read); the reassembler's buffer and table stay within their
// caps; nothing is delivered that no segment carried; after close_all nothing stays open or buffered.
inline PacketRunResult run_packet_input(const uint8_t* input, size_t size) {
  PacketRunResult result;
  if (size < 1) return result;
  static GuardedFrame guard;
  const uint8_t config = input[0];
  const pd3::LinkType link = (config & 1) ? pd3::LinkType::kRawIp : pd3::LinkType::kEthernet;

  pd3::ReassemblyOptions options;
  options.server_port = kFuzzServerPort;
  options.server_ip = (config & 2) ? kFuzzServerIp : 0;
  options.limits.max_flows = 1 + ((config >> 2) & 7);
  options.limits.ooo_flow_bytes = 256u << ((config >> 5) & 3);
  options.limits.ooo_total_bytes = 4096;
  options.limits.hole_timeout_ms = 1;
  options.limits.idle_timeout_ms = 4;
  options.limits.linger_ms = 2;
  uint64_t checksum = 0;
  pd3::FlowCallbacks callbacks;
  callbacks.deliver = [&](uint64_t, const uint8_t* data, size_t len, bool) {
    PD3_FUZZ_ASSERT(len > 0 && data != nullptr);
    for (size_t i = 0; i < len; ++i) checksum += data[i];
    result.delivered += len;
  };
  std::unique_ptr<pd3::TcpReassembler> flows;
  PD3_FUZZ_ASSERT(pd3::TcpReassembler::create(options, std::move(callbacks), &flows) == PD3_OK);

  uint64_t now = 1000000;
  size_t at = 1;
  while (at + kFrameHeader <= size) {
    const size_t want = (size_t(input[at]) | size_t(input[at + 1]) << 8) % (kMaxFuzzFrame + 1);
    const uint8_t step = input[at + 2];
    at += kFrameHeader;
    const size_t n = want < size - at ? want : size - at;
    const uint8_t* frame = guard.place(input + at, n);
    at += n;
    ++result.frames;
    // Sometimes claim the frame was longer on the wire than captured (a cut capture).
    const size_t wire = (step & 0x80) ? n + (step & 0x7F) * 16 : n;
    pd3::TcpSegmentView seg;
    const pd3::DecodeStatus status = pd3::decode_frame(link, frame, n, wire, &seg);
    if (status == pd3::DecodeStatus::kTcp) {
      ++result.segments;
      PD3_FUZZ_ASSERT(seg.payload >= frame && seg.payload <= guard.end());
      PD3_FUZZ_ASSERT(seg.payload_len <= size_t(guard.end() - seg.payload));
      PD3_FUZZ_ASSERT(seg.payload_len <= seg.wire_len);
      now += uint64_t(step & 0x0F) * 250000;  // up to 3.75 ms per frame: timers fire
      flows->on_segment(seg, now);
      if (step & 0x10) flows->expire(now);
    }
    const pd3::ReassemblyStats& s = flows->stats();
    PD3_FUZZ_ASSERT(s.ooo_bytes <= options.limits.ooo_total_bytes);
    PD3_FUZZ_ASSERT(flows->tracked_flows() <= options.limits.max_flows);
    PD3_FUZZ_ASSERT(s.flows_open <= flows->tracked_flows());
    PD3_FUZZ_ASSERT(s.delivered_bytes <= s.client_bytes);
  }
  flows->close_all();
  const pd3::ReassemblyStats& s = flows->stats();
  PD3_FUZZ_ASSERT(s.flows_open == 0 && s.ooo_bytes == 0 && flows->tracked_flows() == 0);
  PD3_FUZZ_ASSERT(s.delivered_bytes == result.delivered);
  result.gaps = s.gaps;
  // The checksum keeps the reads of delivered bytes from being optimised away.
  PD3_FUZZ_ASSERT(checksum <= result.delivered * 255);
  return result;
}

}  // namespace pd3fuzz
