// runner.cpp — the event loop, issuing, and the checks of every reply.
#include "runner.hpp"

#include <errno.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/net.hpp"
#include "net_connect.hpp"

namespace pd3::loadgen {

namespace {

constexpr size_t kScratchBytes = 256 * 1024;  // one recv's worth, shared by every connection
constexpr uint64_t kMaxMessages = 10;         // error / wrong-value lines printed per run
constexpr uint64_t kTickNs = 100'000'000;     // the loop wakes at least this often
constexpr int kConnectTimeoutMs = 5000;

double seconds_of(const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; }

// Up to 48 bytes of s, printable.
std::string excerpt(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 48; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'') {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (s.size() > 48) out += "...";
  return out;
}

}  // namespace

Runner::Runner(const Options& o) : o_(o), values_(o.value_size), scratch_(new uint8_t[kScratchBytes]) {}

bool Runner::init(std::string* error) {
  if (ops_.init(o_, error) != PD3_OK) return false;
  encoder_ = make_encoder(o_.protocol, o_.value_size);
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) {
    *error = std::string("epoll_create1: ") + std::strerror(errno);
    return false;
  }
  for (uint32_t i = 0; i < o_.connections; ++i) {
    UniqueFd fd = connect_tcp(o_.host, o_.port, kConnectTimeoutMs, error);
    if (!fd.valid()) {
      if (i > 0) *error += " (connection " + std::to_string(i + 1) + " of " + std::to_string(o_.connections) + ")";
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = i;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return false;
    }
    conns_.push_back(std::make_unique<Connection>(std::move(fd), i, o_.pipeline, make_decoder(o_.protocol),
                                                      static_cast<ConnectionListener*>(this)));
  }
  is_dirty_.assign(conns_.size(), 0);
  capacity_ = uint64_t(o_.connections) * o_.pipeline;
  // Without --load the keys hold what the server loaded itself: only the hash map does that in a
  // known way (protocol.hpp's load_value); options.cpp refuses --verify without --load for resp.
  model_.reset(o_.verify ? o_.records : 0, o_.load ? 0 : kHashmapLoad);
  return true;
}

// ---- issuing ------------------------------------------------------------------------------------

void Runner::mark_dirty(Connection& c) {
  if (is_dirty_[c.id()]) return;
  is_dirty_[c.id()] = 1;
  dirty_.push_back(&c);
}

void Runner::send(Connection& c, Request& r) {
  switch (r.kind) {
    case RequestKind::kRead:
    case RequestKind::kRmwRead:
      encoder_->read(c.out(), r.key);
      if (o_.verify) r.ticket = model_.begin_read(r.key);
      break;
    case RequestKind::kScan:
      encoder_->read_run(c.out(), r.key, r.count);
      if (o_.verify) {
        r.scan_tickets.resize(r.count);
        for (uint32_t i = 0; i < r.count; ++i) r.scan_tickets[i] = model_.begin_read(r.key + i);
      }
      break;
    default:
      encoder_->write(c.out(), r.key, values_, r.version);
      if (o_.verify && r.kind != RequestKind::kLoad) model_.begin_write(r.key, r.version);
      break;
  }
  c.push();
  if (outstanding_++ == 0) last_activity_ns_ = now_;
  mark_dirty(c);
}

void Runner::start_window() {
  window_started_ = true;
  window_start_ns_ = open_loop_ ? t0_ : now_;
  (void)::getrusage(RUSAGE_SELF, &usage0_);
}

void Runner::issue_op(Connection& c, uint64_t start_ns, bool measured) {
  if (measured) {
    if (!window_started_) start_window();
    ++measured_issued_;
  }
  const PlannedOp p = ops_.next();
  if (p.kind == RequestKind::kInsert && o_.verify) model_.add_record(p.key);
  Request& r = c.next();
  r.start_ns = start_ns;
  r.key = p.key;
  r.version = p.version;
  r.count = p.count;
  r.kind = p.kind;
  r.entries = 0;
  r.measured = measured;
  r.error = r.unexpected = false;
  send(c, r);
}

void Runner::issue_closed(Connection& c) {
  while (issuing_ && c.has_room()) {
    if (phase_ == Phase::kLoad) {
      if (next_load_key_ == o_.records) {
        issuing_ = false;
        return;
      }
      Request& r = c.next();
      r.start_ns = 0;
      r.key = next_load_key_++;
      r.version = 0;
      r.count = 1;
      r.kind = RequestKind::kLoad;
      r.entries = 0;
      r.measured = false;
      r.error = r.unexpected = false;
      send(c, r);
      continue;
    }
    const bool measured = now_ >= t0_;
    if (now_ >= t_end_ || (measured && o_.operations_given && measured_issued_ == o_.operations)) {
      issuing_ = false;
      return;
    }
    issue_op(c, 0, measured);
  }
}

Connection* Runner::free_connection() {
  for (size_t tried = 0; tried < conns_.size(); ++tried) {
    Connection& c = *conns_[rr_];
    rr_ = rr_ + 1 == conns_.size() ? 0 : rr_ + 1;
    if (c.has_room()) return &c;
  }
  return nullptr;
}

void Runner::issue_due() {
  while (issuing_) {
    if (now_ >= t_end_) {  // time is up: what was due and not sent is the backlog
      const double due_in_window = std::ceil(double(t_end_ - sched_start_) / interval_ns_);
      stats_.backlog = due_in_window > double(next_index_) ? uint64_t(due_in_window) - next_index_ : 0;
      issuing_ = false;
      return;
    }
    const uint64_t due = sched_start_ + uint64_t(double(next_index_) * interval_ns_);
    if (due > now_ || due >= t_end_) return;  // (due >= t_end_: the next turn stops the schedule)
    const bool measured = due >= t0_;
    if (measured && o_.operations_given && measured_issued_ == o_.operations) {
      issuing_ = false;
      return;
    }
    if (outstanding_ >= capacity_) return;  // every slot busy: the op waits, its latency runs
    Connection* c = free_connection();
    if (c == nullptr) return;
    issue_op(*c, due, measured);
    ++next_index_;
  }
}

bool Runner::flush_dirty() {
  for (Connection* c : dirty_) {
    is_dirty_[c->id()] = 0;
    if (c->flush(now_) != IoStatus::kOk) {
      connection_failed(*c);
      dirty_.clear();
      std::fill(is_dirty_.begin(), is_dirty_.end(), 0);
      return false;
    }
    const bool want = c->wants_write();
    if (want != c->epollout) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | (want ? uint32_t(EPOLLOUT) : 0u);
      ev.data.u32 = c->id();
      (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c->fd(), &ev);
      c->epollout = want;
    }
  }
  dirty_.clear();
  return true;
}

void Runner::connection_failed(Connection& c) {
  ++stats_.connection_errors;
  stats_.lost_requests += c.outstanding();
  if (!failed_) {
    failed_ = true;
    failure_ = "connection " + std::to_string(c.id() + 1) + " of " + std::to_string(conns_.size()) + " to " + o_.host +
               ":" + std::to_string(o_.port) + ": " + c.failure();
  }
}

// ---- the loop -----------------------------------------------------------------------------------

bool Runner::wait_events(uint64_t timeout_ns, int* n) {
  timespec ts{};
  ts.tv_sec = time_t(timeout_ns / 1000000000ull);
  ts.tv_nsec = long(timeout_ns % 1000000000ull);
  const int max = int(events_.size());
  int got = -1;
  if (have_pwait2_) {
    got = ::epoll_pwait2(epoll_.get(), events_.data(), max, &ts, nullptr);
    if (got < 0 && errno == ENOSYS) have_pwait2_ = false;
  }
  if (!have_pwait2_) got = ::epoll_wait(epoll_.get(), events_.data(), max, int((timeout_ns + 999999) / 1000000));
  if (got < 0) {
    *n = 0;
    if (errno == EINTR) return true;
    failed_ = true;
    failure_ = std::string("epoll_wait: ") + std::strerror(errno);
    return false;
  }
  *n = got;
  for (int i = 0; i < got && !failed_; ++i) {
    Connection& c = *conns_[events_[i].data.u32];
    if (events_[i].events & EPOLLOUT) mark_dirty(c);
    if (events_[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
      if (c.on_readable(scratch_.get(), kScratchBytes) != IoStatus::kOk) connection_failed(c);
    }
  }
  return !failed_;
}

bool Runner::drive() {
  const uint64_t reply_timeout_ns = uint64_t(o_.reply_timeout_s * 1e9);
  uint64_t last_print = now_ns();
  const uint64_t phase_start = last_print;
  for (;;) {
    now_ = now_ns();
    if (open_loop_ && phase_ == Phase::kRun) {
      issue_due();
    } else if (top_up_all_) {
      top_up_all_ = false;
      for (auto& c : conns_) issue_closed(*c);
    }
    if (!flush_dirty()) return false;
    if (!issuing_ && outstanding_ == 0) return true;

    if (phase_ == Phase::kLoad && now_ - last_print >= 1000000000ull) {
      last_print = now_;
      std::fprintf(stderr, "pd3-loadgen: loading: %llu of %llu records (%.0f%%, %.1f s)\n",
                   (unsigned long long)(next_load_key_ - outstanding_), (unsigned long long)o_.records,
                   100.0 * double(next_load_key_ - outstanding_) / double(o_.records), double(now_ - phase_start) / 1e9);
    }
    if (outstanding_ > 0 && now_ - last_activity_ns_ > reply_timeout_ns) {
      failed_ = true;
      failure_ = "no reply from " + o_.host + ":" + std::to_string(o_.port) + " for " +
                 std::to_string(o_.reply_timeout_s) + " s with " + std::to_string(outstanding_) +
                 " requests outstanding (--reply-timeout)";
      return false;
    }

    uint64_t timeout = kTickNs;
    if (open_loop_ && phase_ == Phase::kRun && issuing_ && outstanding_ < capacity_) {
      const uint64_t due = sched_start_ + uint64_t(double(next_index_) * interval_ns_);
      timeout = std::min(timeout, std::min(due, t_end_) > now_ ? std::min(due, t_end_) - now_ : 0);
    }
    int n = 0;
    if (!wait_events(timeout, &n)) return false;
    if (n > 0) last_activity_ns_ = now_ns();
  }
}

bool Runner::load() {
  phase_ = Phase::kLoad;
  issuing_ = true;
  top_up_all_ = true;
  const uint64_t start = now_ns();
  const bool ok = drive();
  stats_.load_seconds = double(now_ns() - start) / 1e9;
  if (ok && load_errors_ > 0) {
    failed_ = true;
    failure_ = "the load got " + std::to_string(load_errors_) + " error replies (first ones above)";
    return false;
  }
  return ok;
}

bool Runner::run() {
  phase_ = Phase::kRun;
  issuing_ = true;
  top_up_all_ = true;
  open_loop_ = o_.rate > 0;
  now_ = now_ns();
  sched_start_ = now_;
  t0_ = now_ + uint64_t(o_.warmup_s * 1e9);
  t_end_ = o_.operations_given ? UINT64_MAX : t0_ + uint64_t(o_.duration_s * 1e9);
  interval_ns_ = open_loop_ ? 1e9 / o_.rate : 0;
  const bool ok = drive();
  if (window_started_) {
    rusage usage1{};
    (void)::getrusage(RUSAGE_SELF, &usage1);
    stats_.cpu_user_s = seconds_of(usage1.ru_utime) - seconds_of(usage0_.ru_utime);
    stats_.cpu_sys_s = seconds_of(usage1.ru_stime) - seconds_of(usage0_.ru_stime);
    const uint64_t end = stats_.ops > 0 ? last_done_ns_ : now_ns();
    stats_.seconds = end > window_start_ns_ ? double(end - window_start_ns_) / 1e9 : 0;
  }
  return ok;
}

// ---- replies ------------------------------------------------------------------------------------

void Runner::report_bad_entry(const Request& r, uint32_t index, const ReplyEntry& e) {
  if (++messages_ > kMaxMessages) return;
  const bool binary = o_.protocol == Protocol::kBinary;
  const std::string key = encoder_->key_name(r.key + (r.kind == RequestKind::kScan ? index : 0));
  const char* what = e.kind == EntryKind::kError      ? "error reply"
                     : e.kind == EntryKind::kValue    ? "a value"
                     : e.kind == EntryKind::kNil      ? "not found"
                     : e.kind == EntryKind::kOk       ? "OK"
                                                      : "unexpected reply";
  std::fprintf(stderr, "pd3-loadgen: %s to %s %s%s%s%s\n", what, request_name(r.kind, binary), key.c_str(),
               e.bytes.empty() ? "" : ": '", excerpt(e.bytes).c_str(), e.bytes.empty() ? "" : "'");
}

void Runner::check_read(Request& r, uint32_t index, const ReplyEntry& e) {
  const uint64_t key = r.key + index;
  const std::string_view got = e.bytes;
  ++stats_.verified_reads;
  if (model_.finish_read(key, ticket_of(r, index), e.kind == EntryKind::kNil ? nullptr : &got, values_, &possible_)) {
    return;
  }
  ++stats_.wrong_values;
  if (++messages_ > kMaxMessages) return;
  std::string expected;
  for (size_t i = 0; i < possible_.size() && i < 4; ++i) {
    if (i > 0) expected += ", or ";
    const uint64_t v = possible_[i];
    if (v == kAbsent) {
      expected += "absent";
      continue;
    }
    std::string bytes(values_.size(), '\0');
    values_.write(key, v, reinterpret_cast<uint8_t*>(bytes.data()));
    expected += (v == kHashmapLoad ? std::string("the hash map's load value") : "version " + std::to_string(v)) +
                " '" + excerpt(bytes) + "'";
  }
  if (possible_.size() > 4) expected += " (" + std::to_string(possible_.size()) + " versions possible)";
  std::string shown = "nil (not found)";
  if (e.kind != EntryKind::kNil) {
    shown.assign(1, '\'');
    shown.append(excerpt(got)).append("' (").append(std::to_string(got.size())).append(" bytes)");
  }
  // A key past --records read before this run's insert of it was acknowledged must be absent; a
  // value there is usually left over from an earlier run.
  const bool leftover = key >= o_.records && e.kind == EntryKind::kValue &&
                        std::find(possible_.begin(), possible_.end(), kAbsent) != possible_.end();
  std::fprintf(stderr, "pd3-loadgen: wrong value for key %s: %s returned %s; expected %s%s\n",
               encoder_->key_name(key).c_str(), request_name(r.kind, o_.protocol == Protocol::kBinary), shown.c_str(),
               expected.c_str(),
               leftover ? " (a key past --records that this run had not written yet: left over from an earlier "
                          "run? --verify with inserting workloads needs a server without such keys)"
                        : "");
}

void Runner::on_entry(Connection&, Request& r, uint32_t index, const ReplyEntry& e) {
  const bool read = !is_write(r.kind);
  // RESP: MGET (a scan) is answered by an array, GET and SET by one value each.
  if (o_.protocol == Protocol::kResp && e.kind != EntryKind::kError && e.element != (r.kind == RequestKind::kScan)) {
    r.unexpected = true;
    ReplyEntry shown = e;
    shown.kind = EntryKind::kUnexpected;
    shown.bytes = e.element ? "an array reply" : "a single value where an array was expected";
    report_bad_entry(r, index, shown);
    if (o_.verify && read && index < r.count) model_.abandon_read(r.key + index, ticket_of(r, index));
    return;
  }
  if (read && index < r.count && (e.kind == EntryKind::kValue || e.kind == EntryKind::kNil)) {
    if (e.kind == EntryKind::kNil) ++stats_.not_found;
    if (o_.verify) check_read(r, index, e);
    return;
  }
  if (!read && index == 0 && e.kind == EntryKind::kOk) return;
  if (e.kind == EntryKind::kError) {
    r.error = true;
    if (r.kind == RequestKind::kLoad) ++load_errors_;
  } else {
    r.unexpected = true;
  }
  report_bad_entry(r, index, e);
  if (o_.verify && read && index < r.count) model_.abandon_read(r.key + index, ticket_of(r, index));
}

void Runner::on_request_done(Connection& c, Request& r) {
  --outstanding_;
  const bool read = !is_write(r.kind);
  const uint32_t expected = read ? r.count : 1;
  if (r.entries != expected && !r.error && !r.unexpected) {
    r.unexpected = true;
    if (++messages_ <= kMaxMessages) {
      std::fprintf(stderr, "pd3-loadgen: a reply of %u entries to %s %s (expected %u)\n", r.entries,
                   request_name(r.kind, o_.protocol == Protocol::kBinary), encoder_->key_name(r.key).c_str(), expected);
    }
  }
  if (o_.verify && read) {
    for (uint32_t i = std::min(r.entries, r.count); i < r.count; ++i) model_.abandon_read(r.key + i, ticket_of(r, i));
  }
  if (o_.verify && !read && r.kind != RequestKind::kLoad) {
    model_.finish_write(r.key, r.version, !r.error && !r.unexpected);
  }
  if (r.error) {
    ++stats_.error_replies;
  } else if (r.unexpected) {
    ++stats_.unexpected_replies;
  }
  if (r.kind == RequestKind::kLoad) {
    if (!r.error && !r.unexpected) ++stats_.loaded;
    issue_closed(c);
    return;
  }
  if (r.measured) ++stats_.requests;
  if (r.kind == RequestKind::kRmwRead && !r.error && !r.unexpected) {
    // The write half of READ-MODIFY-WRITE, on the same connection, timed from the read's start.
    Request& w = c.next();
    w.start_ns = r.start_ns;
    w.key = r.key;
    w.version = r.version;
    w.count = 1;
    w.kind = RequestKind::kRmwWrite;
    w.entries = 0;
    w.measured = r.measured;
    w.error = w.unexpected = false;
    send(c, w);
    return;
  }
  if (r.measured) {
    const uint64_t done = c.last_read_ns();
    stats_.latency.record(done > r.start_ns ? done - r.start_ns : 0);
    ++stats_.ops;
    last_done_ns_ = std::max(last_done_ns_, done);
  }
  if (!open_loop_) issue_closed(c);
}

}  // namespace pd3::loadgen
