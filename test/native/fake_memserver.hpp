// fake_memserver.hpp — a small in-test memory server: one thread speaking the transport protocol
// over loopback with the shared codec (hello check, regions in a std::map with bounds checks, a
// server id), which a test can mute, kill and restart on the same port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/net.hpp"
#include "common/transport_codec.hpp"
#include "common/unique_fd.hpp"
#include "pd3/status.h"
#include "pd3/transport.h"

namespace pd3test {

// The fake server. Regions persist across kill() and start(), like a server with backing files.
class FakeMemServer {
 public:
  // How the fake presents itself.
  struct Options {
    uint16_t server_id = 1;
    std::string token = "secret";
    uint64_t capacity = 64ull << 20;  // bytes offered in total (told in the hello)
    uint64_t announce_free = 0;       // free bytes claimed in the hello; 0 = the true figure
    uint64_t limit = 0;               // bytes regions may really take; 0 = capacity
  };

  // Knobs set by the test and counters read by it. Every access uses the default seq_cst order:
  // the simplest to reason about, and this server's speed does not matter.
  std::atomic<bool> mute{false};          // answer hellos, hold request frames until cleared
  std::atomic<bool> silent{false};        // accept connections, never answer anything
  std::atomic<bool> corrupt_next{false};  // the next response frame carries a wrong batch number
  // Grants PD3_HELLO_ANY_ORDER to clients that ask (set before they connect), and then answers the
  // frames held while muted newest first.
  std::atomic<bool> any_order{false};
  std::atomic<uint64_t> frames{0};        // request frames received
  std::atomic<uint64_t> records{0};       // request records received
  std::atomic<uint64_t> largest_frame{0}; // most records seen in one frame
  std::atomic<uint64_t> hellos{0};        // hellos accepted
  std::atomic<uint64_t> refused{0};       // hellos refused (wrong token)

  explicit FakeMemServer(Options options) : options_(std::move(options)) {}
  ~FakeMemServer() { kill(); }

  // Listens on 127.0.0.1 (a free port the first time, the same port after a kill) and starts the
  // thread. False if the port cannot be bound.
  bool start() {
    pd3::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener.valid()) return false;
    const int one = 1;
    setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    if (::listen(listener.get(), 16) != 0) return false;
    socklen_t len = sizeof a;
    getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    stop_.store(false);
    thread_ = std::thread([this, l = std::move(listener)]() mutable { serve(std::move(l)); });
    return true;
  }

  // Closes the listener and every connection at once and stops the thread.
  void kill() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  uint16_t port() const { return port_; }
  pd3::Endpoint endpoint() const { return pd3::Endpoint{"127.0.0.1", port_}; }

 private:
  // One client connection.
  struct Conn {
    pd3::UniqueFd fd;
    pd3::FrameReader reader{PD3_FRAME_MAX_DEFAULT};
    bool greeted = false;
    bool any_order = false;                 // granted PD3_HELLO_ANY_ORDER
    std::deque<std::vector<uint8_t>> held;  // request frames (header + body) kept while muted
  };

  void serve(pd3::UniqueFd listener) {
    std::vector<std::unique_ptr<Conn>> conns;
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
      for (auto& c : conns) fds.push_back({c->fd.get(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), 1);
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          auto c = std::make_unique<Conn>();
          c->fd.reset(fd);
          conns.push_back(std::move(c));
        }
      }
      for (size_t i = 0; i < conns.size();) {
        const bool readable = i + 1 < fds.size() && fds[i + 1].revents != 0;
        if (!step(*conns[i], readable)) {
          conns.erase(conns.begin() + long(i));
          fds.erase(fds.begin() + long(i) + 1);
          continue;
        }
        ++i;
      }
    }
  }

  // Reads and answers what one connection has; false when it must be closed.
  bool step(Conn& c, bool readable) {
    if (!mute.load()) {
      // Executed in the order received, as a real server does; only the answers may go newest first.
      std::vector<std::vector<uint8_t>> answers;
      while (!c.held.empty()) {
        answers.push_back(execute_frame(c.held.front().data(), c.held.front().size()));
        c.held.pop_front();
        if (answers.back().empty()) return false;
      }
      if (c.any_order) std::reverse(answers.begin(), answers.end());
      for (const auto& a : answers)
        if (pd3::send_all(c.fd.get(), a.data(), a.size(), 2000) != PD3_OK) return false;
    }
    if (!readable) return true;
    if (c.reader.fill(c.fd.get()) < 0) return false;
    for (;;) {
      pd3_frame h;
      const uint8_t* body = nullptr;
      const int got = c.reader.next(&h, &body);
      if (got < 0) return false;
      if (got == 0) return true;
      if (silent.load()) continue;
      const size_t body_len = h.length - sizeof h;
      if (!c.greeted) {
        if (h.kind != PD3_FRAME_HELLO) return false;
        std::string tenant;
        uint16_t flags = 0;
        const int rc = pd3::check_hello(body, body_len, options_.token, &tenant, &flags);
        c.any_order = any_order.load() && (flags & PD3_HELLO_ANY_ORDER) != 0;
        pd3_hello_reply r{};
        r.flags = c.any_order ? uint16_t(PD3_HELLO_ANY_ORDER) : uint16_t(0);
        r.version = PD3_TRANSPORT_VERSION;
        r.status = uint16_t(-rc);
        r.server_id = options_.server_id;
        r.max_frame = PD3_FRAME_MAX_DEFAULT;
        r.capacity = options_.capacity;
        r.free_bytes = options_.announce_free ? options_.announce_free : options_.capacity - used_;
        std::vector<uint8_t> out;
        pd3::encode_hello_reply(r, &out);
        // Counted before the reply goes out: a client that has the refusal may read the counter.
        if (rc != PD3_OK) refused.fetch_add(1);
        if (pd3::send_all(c.fd.get(), out.data(), out.size(), 1000) != PD3_OK || rc != PD3_OK) return false;
        hellos.fetch_add(1);
        c.greeted = true;
        continue;
      }
      if (h.kind != PD3_FRAME_REQUEST) return false;
      frames.fetch_add(1);
      records.fetch_add(h.count);
      if (h.count > largest_frame.load()) largest_frame.store(h.count);
      std::vector<uint8_t> frame(reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + sizeof h);
      frame.insert(frame.end(), body, body + body_len);
      if (mute.load() || !c.held.empty()) {
        c.held.push_back(std::move(frame));
      } else if (!answer(c, frame.data(), frame.size())) {
        return false;
      }
    }
  }

  // Executes one request frame and sends its response frame.
  bool answer(Conn& c, const uint8_t* frame, size_t len) {
    const std::vector<uint8_t> out = execute_frame(frame, len);
    return !out.empty() && pd3::send_all(c.fd.get(), out.data(), out.size(), 2000) == PD3_OK;
  }

  // Executes one request frame; its response frame, or nothing if the frame is malformed.
  std::vector<uint8_t> execute_frame(const uint8_t* frame, size_t len) {
    pd3_frame h;
    std::memcpy(&h, frame, sizeof h);
    const uint8_t* body = frame + sizeof h;
    if (pd3::validate_requests(body, len - sizeof h, h.count) != PD3_OK) return {};
    std::vector<uint8_t> out;
    pd3::FrameBuilder b(&out);
    b.begin(PD3_FRAME_RESPONSE, corrupt_next.exchange(false) ? h.seq + 100 : h.seq);
    size_t at = 0;
    for (uint32_t i = 0; i < h.count; ++i) {
      pd3::TransportRequest r;
      pd3::decode_request(body + at, len - sizeof h - at, &r);
      at += r.record_len;
      execute(r, &b);
    }
    b.finish();
    return out;
  }

  std::vector<uint8_t>* region(uint32_t id) {
    if (pd3_region_server(id) != options_.server_id) return nullptr;
    auto it = regions_.find(pd3_region_local(id));
    return it == regions_.end() ? nullptr : &it->second;
  }

  void execute(const pd3::TransportRequest& r, pd3::FrameBuilder* b) {
    switch (r.op()) {
      case PD3_OP_READ:
      case PD3_OP_WRITE: {
        std::vector<uint8_t>* g = region(r.region);
        if (g == nullptr) return b->response(r.op_id, PD3_E_BAD_REGION, 0, nullptr, 0);
        if (uint64_t(r.offset) + r.size > g->size()) return b->response(r.op_id, PD3_E_RANGE, 0, nullptr, 0);
        if (r.op() == PD3_OP_READ) return b->response(r.op_id, PD3_OK, r.size, g->data() + r.offset, r.size);
        std::memcpy(g->data() + r.offset, r.data, r.size);
        return b->response(r.op_id, PD3_OK, r.size, nullptr, 0);
      }
      case PD3_OP_CONTROL:
        if (r.region == PD3_CTL_ALLOCATE) {
          const uint64_t limit = options_.limit ? options_.limit : options_.capacity;
          if (r.size == 0 || used_ + r.size > limit || next_local_ > PD3_REGION_LOCAL_MAX)
            return b->response(r.op_id, PD3_E_NOSPACE, 0, nullptr, 0);
          const uint32_t local = next_local_++;
          regions_[local].assign(r.size, 0);
          used_ += r.size;
          const pd3_alloc_reply a{pd3_region_id(options_.server_id, local), r.size};
          return b->response(r.op_id, PD3_OK, sizeof a, &a, sizeof a);
        }
        if (r.region == PD3_CTL_DEALLOCATE) {
          std::vector<uint8_t>* g = region(r.offset);
          if (g == nullptr) return b->response(r.op_id, PD3_E_BAD_REGION, 0, nullptr, 0);
          used_ -= g->size();
          regions_.erase(pd3_region_local(r.offset));
          return b->response(r.op_id, PD3_OK, 0, nullptr, 0);
        }
        return b->response(r.op_id, PD3_E_BAD_OP, 0, nullptr, 0);
      default:
        return b->prefetch_response(r.op_id, PD3_E_NOT_FOUND, r.data, uint16_t(r.data_len), 0, nullptr, 0);
    }
  }

  Options options_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  // Touched by the serving thread only (start() and kill() order it between runs).
  std::map<uint32_t, std::vector<uint8_t>> regions_;  // by local id
  uint32_t next_local_ = 1;
  uint64_t used_ = 0;
};

}  // namespace pd3test
