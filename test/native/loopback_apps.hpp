// loopback_apps.hpp — small TCP apps on 127.0.0.1 for the tests of the mirror backends and the
// prefetch path: a listening socket on a free port, an app that discards what clients send, and
// connecting to a loopback port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"

namespace pd3test {

// A socket listening on 127.0.0.1 at a port the kernel picked (*port); invalid on failure.
inline pd3::UniqueFd listen_loopback(int backlog, uint16_t* port) {
  pd3::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), backlog) != 0)
    return pd3::UniqueFd();
  socklen_t len = sizeof a;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// A connected socket to 127.0.0.1:port, or -1.
inline int connect_loopback(uint16_t port) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
  ::close(s);
  return -1;
}

// A TCP app on 127.0.0.1 that reads and discards whatever its clients send.
class DiscardApp {
 public:
  DiscardApp() {
    listener_ = listen_loopback(64, &port);
    if (!listener_.valid()) return;
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        conns_.emplace_back([c] {
          pd3::UniqueFd fd(c);
          std::vector<uint8_t> buf(1 << 16);
          while (::read(fd.get(), buf.data(), buf.size()) > 0) {
          }
        });
      }
    });
  }
  ~DiscardApp() {
    ::shutdown(listener_.get(), SHUT_RDWR);  // accept() fails: the thread ends
    if (thread_.joinable()) thread_.join();
    for (auto& t : conns_) t.join();
  }
  uint16_t port = 0;

 private:
  pd3::UniqueFd listener_;
  std::thread thread_;
  std::vector<std::thread> conns_;  // touched by the accept thread only until it is joined
};

}  // namespace pd3test
