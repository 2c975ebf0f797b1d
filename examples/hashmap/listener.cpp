// listener.cpp — socket setup, accept, stdin commands, signals.
#include "listener.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cstring>

#include "json_line.hpp"
#include "pd3/status.h"

namespace pd3::hashmap {

int Listener::open(const std::string& host, uint16_t port, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || found == nullptr) {
    *why = "cannot resolve " + host + ": " + gai_strerror(rc);
    return PD3_E_INVAL;
  }
  sockaddr_in addr;
  std::memcpy(&addr, found->ai_addr, sizeof addr);
  freeaddrinfo(found);
  addr.sin_port = htons(port);
  fd_ = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (fd_.get() < 0 || setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_.get(), 1024) != 0) {
    *why = "cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    return PD3_E_SYS;
  }
  socklen_t len = sizeof addr;
  getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  return PD3_OK;
}

void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that went away is an EPIPE, not a process exit
}

namespace {

std::string peer_of(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

void accept_all(const Listener& listener, const ControlHandlers& handlers) {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    const int fd = accept4(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
        Log::write(LogLevel::kWarn,
                   JsonLine(LogLevel::kWarn, "accept.failed", std::strerror(errno)));
      }
      return;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    handlers.accepted(UniqueFd(fd), peer_of(addr));
  }
}

// Reads what stdin has; runs each complete line. False once stdin is closed.
bool read_commands(std::string* pending, const ControlHandlers& handlers) {
  char buf[512];
  const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n <= 0) return n < 0 && (errno == EINTR || errno == EAGAIN);
  pending->append(buf, size_t(n));
  size_t nl;
  while ((nl = pending->find('\n')) != std::string::npos) {
    std::string line = pending->substr(0, nl);
    pending->erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "stats") {
      handlers.stats();
    } else if (!line.empty()) {
      Log::write(LogLevel::kWarn, JsonLine(LogLevel::kWarn, "stdin.unknown", "unknown command on stdin (known: stats)")
                                      .field("command", line));
    }
  }
  if (pending->size() > 4096) pending->clear();  // not a command: a line this long is noise
  return true;
}

}  // namespace

int run_control_loop(const Listener& listener, const ControlHandlers& handlers) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const UniqueFd sfd(signalfd(-1, &set, SFD_CLOEXEC));
  std::string pending;
  bool stdin_open = true;
  for (;;) {
    pollfd fds[3] = {{listener.fd(), POLLIN, 0}, {sfd.get(), POLLIN, 0}, {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) continue;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si{};
      if (::read(sfd.get(), &si, sizeof si) == sizeof si) return int(si.ssi_signo);
    }
    if (fds[0].revents & POLLIN) accept_all(listener, handlers);
    if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) stdin_open = read_commands(&pending, handlers);
  }
}

}  // namespace pd3::hashmap
