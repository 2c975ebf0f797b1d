// net_connect.cpp — non-blocking connect with a timeout.
#include "net_connect.hpp"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

namespace pd3::loadgen {

UniqueFd connect_tcp(const std::string& host, uint16_t port, int timeout_ms, std::string* error) {
  const std::string where = "connect to " + host + ":" + std::to_string(port) + ": ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    *error = where + ::gai_strerror(rc);
    return UniqueFd();
  }
  std::string last = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      last = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      rc = ::poll(&p, 1, timeout_ms);
      if (rc == 0) {
        last = "timed out after " + std::to_string(timeout_ms) + " ms";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (rc < 0 || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        last = std::strerror(err);
        continue;
      }
    } else if (rc != 0) {
      last = std::strerror(errno);
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(found);
    return fd;
  }
  ::freeaddrinfo(found);
  *error = where + last;
  return UniqueFd();
}

}  // namespace pd3::loadgen
