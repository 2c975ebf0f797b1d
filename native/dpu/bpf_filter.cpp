// bpf_filter.cpp — builds the mirror's classic BPF program with a tiny label-resolving assembler.
#include "dpu/bpf_filter.hpp"

#include <linux/if_ether.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {
namespace {

constexpr uint32_t kMaxInstructions = 4096;  // BPF_MAXINSNS

// Network-header-relative offsets (IPv4 header, then the TCP header at X = IHL * 4), from the
// system's header definitions (as packet_decode.cpp uses them).
constexpr uint32_t net(size_t off) { return uint32_t(SKF_NET_OFF) + uint32_t(off); }
constexpr size_t kIpFragmentField = offsetof(iphdr, frag_off);
constexpr size_t kIpProtocol = offsetof(iphdr, protocol);
constexpr size_t kIpSource = offsetof(iphdr, saddr);
constexpr size_t kIpDestination = offsetof(iphdr, daddr);
constexpr size_t kTcpSourcePort = offsetof(tcphdr, source);
constexpr size_t kTcpDestinationPort = offsetof(tcphdr, dest);

// Emits instructions whose jump targets are labels, resolved into relative offsets at the end.
class Assembler {
 public:
  using Label = int;
  Label label() {
    bound_.push_back(-1);
    return Label(bound_.size() - 1);
  }
  void bind(Label l) { bound_[size_t(l)] = int(code_.size()); }
  void op(uint16_t code, uint32_t k) { code_.push_back(Insn{sock_filter{code, 0, 0, k}, -1, -1}); }
  // A conditional jump: to `yes` if the condition holds, else to `no` (-1: the next instruction).
  void jump(uint16_t code, uint32_t k, Label yes, Label no) {
    code_.push_back(Insn{sock_filter{uint16_t(BPF_JMP | code | BPF_K), 0, 0, k}, yes, no});
  }
  std::vector<sock_filter> finish() const {
    std::vector<sock_filter> out;
    for (size_t i = 0; i < code_.size(); ++i) {
      sock_filter f = code_[i].f;
      f.jt = offset(i, code_[i].yes);
      f.jf = offset(i, code_[i].no);
      out.push_back(f);
    }
    return out;
  }

 private:
  // One instruction and the labels its jumps go to.
  struct Insn {
    sock_filter f;
    Label yes;
    Label no;
  };
  // Jumps go forward only: the program is tiny, so every distance fits in a byte.
  uint8_t offset(size_t at, Label l) const { return l < 0 ? 0 : uint8_t(bound_[size_t(l)] - int(at) - 1); }

  std::vector<Insn> code_;
  std::vector<int> bound_;
};

}  // namespace

std::vector<sock_filter> tcp_port_filter(uint32_t ip, uint16_t port) {
  Assembler a;
  const auto drop = a.label();
  const auto whole = a.label();
  const auto from_server = a.label();
  a.op(BPF_LD | BPF_H | BPF_ABS, uint32_t(SKF_AD_OFF + SKF_AD_PROTOCOL));  // A = EtherType of the skb
  a.jump(BPF_JEQ, ETH_P_IP, -1, drop);
  a.op(BPF_LD | BPF_B | BPF_ABS, net(kIpProtocol));
  a.jump(BPF_JEQ, IPPROTO_TCP, -1, drop);
  a.op(BPF_LD | BPF_H | BPF_ABS, net(kIpFragmentField));
  a.jump(BPF_JSET, IP_OFFMASK, drop, -1);  // a later fragment: no TCP header in it
  a.op(BPF_LD | BPF_B | BPF_ABS, net(0));           // X = IHL * 4
  a.op(BPF_ALU | BPF_AND | BPF_K, 0x0F);
  a.op(BPF_ALU | BPF_LSH | BPF_K, 2);
  a.op(BPF_MISC | BPF_TAX, 0);
  a.op(BPF_LD | BPF_H | BPF_IND, net(kTcpDestinationPort));
  a.jump(BPF_JEQ, port, -1, from_server);
  if (ip != 0) {
    a.op(BPF_LD | BPF_W | BPF_ABS, net(kIpDestination));
    a.jump(BPF_JEQ, ip, whole, from_server);
  }
  a.bind(whole);
  a.op(BPF_RET | BPF_K, kFilterWholePacket);
  a.bind(from_server);
  a.op(BPF_LD | BPF_H | BPF_IND, net(kTcpSourcePort));
  a.jump(BPF_JEQ, port, -1, drop);
  if (ip != 0) {
    a.op(BPF_LD | BPF_W | BPF_ABS, net(kIpSource));
    a.jump(BPF_JEQ, ip, -1, drop);
  }
  a.op(BPF_RET | BPF_K, kFilterHeaderSnap);
  a.bind(drop);
  a.op(BPF_RET | BPF_K, 0);
  return a.finish();
}

int attach_filter(int fd, const std::vector<sock_filter>& program) {
  if (program.empty() || program.size() > kMaxInstructions)
    return fail(PD3_E_INVAL, "BPF program of %zu instructions (1..%u)", program.size(), kMaxInstructions);
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program.size());
  prog.filter = const_cast<sock_filter*>(program.data());
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0)
    return fail(PD3_E_SYS, "SO_ATTACH_FILTER: %s", std::strerror(errno));
  return PD3_OK;
}

}  // namespace pd3
