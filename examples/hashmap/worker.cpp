// worker.cpp — the worker's event loop, batch execution and response encoding.
#include "worker.hpp"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cstring>

#include "json_line.hpp"

namespace pd3::hashmap {

namespace {

constexpr size_t kReadBudget = 1u << 20;       // bytes read per readiness event (fairness)
constexpr size_t kMaxPendingOutput = 4u << 20;  // stop reading a client that does not read its answers
constexpr int kEvents = 64;
// Idle epoll timeouts: short while write-backs are in flight (their completions free stripe
// counters that the pd3 mode checks), long otherwise.
constexpr int kBusyTimeoutMs = 1;
constexpr int kIdleTimeoutMs = 50;

}  // namespace

Worker::Worker(uint32_t index, HashTable& table, std::unique_ptr<HostChannel> channel, Stats& stats)
    : index_(index), table_(table), channel_(std::move(channel)), stats_(stats) {
  context_.channel = channel_.get();
  context_.stats = &stats_;
}

Worker::~Worker() { stop(); }

void Worker::set_miss_path(std::unique_ptr<MissPath> miss) {
  miss_ = std::move(miss);
  context_.miss = miss_.get();
}

int Worker::start() {
  epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  wake_ = UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (epoll_.get() < 0 || wake_.get() < 0) return PD3_E_SYS;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_.get();
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev) != 0) return PD3_E_SYS;
  thread_ = std::thread([this] { loop(); });
  return PD3_OK;
}

void Worker::adopt(UniqueFd fd, std::string peer) {
  {
    std::lock_guard<std::mutex> g(handover_mu_);
    handover_.emplace_back(std::move(fd), std::move(peer));
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);  // a full counter still wakes
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);  // release: the loop's acquire load ends it
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void Worker::take_new_connections() {
  uint64_t count;
  [[maybe_unused]] const ssize_t n = ::read(wake_.get(), &count, sizeof count);
  std::vector<std::pair<UniqueFd, std::string>> fresh;
  {
    std::lock_guard<std::mutex> g(handover_mu_);
    fresh.swap(handover_);
  }
  for (auto& [fd, peer] : fresh) {
    const int raw = fd.get();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = raw;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, raw, &ev) != 0) {
      Log::write(LogLevel::kWarn, JsonLine(LogLevel::kWarn, "conn.failed", "cannot watch a new connection")
                                      .field("peer", peer)
                                      .field("error", std::strerror(errno)));
      continue;
    }
    stats_.add(&Stats::connections);
    Log::write(LogLevel::kDebug, JsonLine(LogLevel::kDebug, "conn.open", "client connected")
                                     .field("peer", peer)
                                     .field("worker", uint64_t(index_)));
    connections_.emplace(raw, std::make_unique<Connection>(std::move(fd), std::move(peer)));
  }
}

void Worker::loop() {
  epoll_event events[kEvents];
  while (!stopping_.load(std::memory_order_acquire)) {  // acquire: pairs with stop()
    const bool busy = channel_ != nullptr && channel_->inflight() > 0;
    const int n = epoll_wait(epoll_.get(), events, kEvents, busy ? kBusyTimeoutMs : kIdleTimeoutMs);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_.get()) {
        take_new_connections();
        continue;
      }
      const auto it = connections_.find(fd);
      if (it != connections_.end() && !on_event(*it->second, events[i].events)) connections_.erase(it);
    }
    if (channel_ != nullptr) channel_->poll();
    if (miss_ != nullptr) miss_->between_ops();
  }
  connections_.clear();
}

bool Worker::on_event(Connection& c, uint32_t events) {
  if (events & EPOLLERR) {
    close_connection(c.fd(), "conn.close", "socket error");
    return false;
  }
  if ((events & EPOLLHUP) && !c.want_read) {
    close_connection(c.fd(), "conn.close", "the client went away without reading its answers");
    return false;
  }
  if ((events & EPOLLOUT) && c.send() == IoResult::kFailed) {
    close_connection(c.fd(), "conn.close", "send failed");
    return false;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) && c.want_read) {
    const IoResult r = c.receive(kReadBudget);
    if (!process(c)) {
      c.send();  // answers to the requests before the bad one, if the socket takes them
      return false;
    }
    if (r == IoResult::kPeerClosed) {
      c.send();
      if (c.input_size() > 0) {
        stats_.add(&Stats::protocol_errors);
        close_connection(c.fd(), "conn.protocol_error",
                         "truncated request: the client closed after " + std::to_string(c.input_size()) +
                             " bytes of an incomplete request");
      } else {
        close_connection(c.fd(), "conn.close", "closed by the client");
      }
      return false;
    }
    if (r == IoResult::kFailed) {
      close_connection(c.fd(), "conn.close", "receive failed");
      return false;
    }
  }
  if (c.send() == IoResult::kFailed) {
    close_connection(c.fd(), "conn.close", "send failed");
    return false;
  }
  update_interest(c);
  return true;
}

bool Worker::process(Connection& c) {
  requests_.clear();
  entries_.clear();
  size_t consumed = 0;
  std::string why;
  const ParseOutcome outcome = parse_requests(c.input(), c.input_size(), &requests_, &entries_, &consumed, &why);
  if (!requests_.empty()) run_batch(c);
  c.consume(consumed);
  if (outcome == ParseOutcome::kMalformed) {
    stats_.add(&Stats::protocol_errors);
    close_connection(c.fd(), "conn.protocol_error", "malformed request: " + why);
    return false;
  }
  return true;
}

void Worker::run_batch(Connection& c) {
  stats_.add(&Stats::requests, requests_.size());
  if (miss_ != nullptr) {
    // The async mode starts the reads of the whole batch's misses at once.
    batch_keys_.clear();
    for (const Entry& e : entries_) {
      if (e.check == EntryStatus::kOk) batch_keys_.push_back(e.key);
    }
    miss_->prepare(batch_keys_);
  }
  for (const Request& r : requests_) execute(r, &c.output());
}

void Worker::execute(const Request& r, std::vector<uint8_t>* out) {
  const size_t at = out->size();
  out->resize(at + sizeof(ResponseHeader));
  for (uint16_t i = 0; i < r.count; ++i) {
    const Entry& e = entries_[r.first + i];
    EntryStatus status = e.check;
    uint64_t value = 0;
    if (status == EntryStatus::kOk) {
      switch (r.op) {
        case PD3_BIN_GET:
          stats_.add(&Stats::gets);
          status = table_.get(context_, e.key, &value);
          break;
        case PD3_BIN_PUT:
          stats_.add(&Stats::puts);
          status = table_.put(context_, e.key, e.value);
          break;
        default:
          stats_.add(&Stats::dels);
          status = table_.del(context_, e.key);
          break;
      }
      if (miss_ != nullptr) miss_->between_ops();
    }
    out->push_back(uint8_t(status));
    if (r.op == PD3_BIN_GET && status == EntryStatus::kOk) {
      const size_t v = out->size();
      out->resize(v + 4 + kValueBytes);
      std::memcpy(out->data() + v, &kValueBytes, 4);
      store_u64(out->data() + v + 4, value);
    }
  }
  ResponseHeader h{};
  h.length = uint32_t(out->size() - at - sizeof(uint32_t));
  h.magic = kResponseMagic;
  h.op = r.op;
  h.count = r.count;
  std::memcpy(out->data() + at, &h, sizeof h);
}

void Worker::update_interest(Connection& c) {
  const bool read = c.output_pending() < kMaxPendingOutput;
  const bool write = c.output_pending() > 0;
  if (read == c.want_read && write == c.want_write) return;
  c.want_read = read;
  c.want_write = write;
  epoll_event ev{};
  ev.events = (read ? uint32_t(EPOLLIN | EPOLLRDHUP) : 0u) | (write ? uint32_t(EPOLLOUT) : 0u);
  ev.data.fd = c.fd();
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd(), &ev);
}

void Worker::close_connection(int fd, const char* event, const std::string& why) {
  const auto it = connections_.find(fd);
  const std::string peer = it == connections_.end() ? "?" : it->second->peer();
  const bool problem = std::strcmp(event, "conn.close") != 0;
  const LogLevel level = problem ? LogLevel::kWarn : LogLevel::kDebug;
  Log::write(level, JsonLine(level, event, why).field("peer", peer).field("worker", uint64_t(index_)));
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

}  // namespace pd3::hashmap
