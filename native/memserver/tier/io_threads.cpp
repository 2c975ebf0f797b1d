// io_threads.cpp — the thread-pool TierIo: worker threads run blocking pread/pwrite and hand the
// results back through a locked list and an eventfd.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "memserver/tier/tier_io.hpp"
#include "pd3/status.h"

namespace pd3::tier {

namespace {

// Moves all of op's bytes, retrying short transfers; returns len or -errno.
int64_t transfer(const IoOp& op) {
  if (op.kind == IoOp::Kind::kSync) return fdatasync(op.fd) == 0 ? 0 : -errno;
  uint64_t done = 0;
  while (done < op.len) {
    const ssize_t n = op.kind == IoOp::Kind::kRead
                          ? ::pread(op.fd, op.buf + done, op.len - done, off_t(op.offset + done))
                          : ::pwrite(op.fd, op.buf + done, op.len - done, off_t(op.offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) return -EIO;  // end of file inside a page: the backing file is shorter than its region
    done += uint64_t(n);
  }
  return int64_t(op.len);
}

// Workers take ops from a queue and post completions; the owner thread submits and reaps.
class ThreadIo final : public TierIo {
 public:
  ThreadIo(UniqueFd event, IoFault fault) : event_(std::move(event)), fault_(std::move(fault)) {}
  ~ThreadIo() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int start(uint32_t threads) {
    try {
      for (uint32_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      return fail(PD3_E_SYS, "cannot start a tier I/O thread: %s", e.what());
    }
    return PD3_OK;
  }

  IoKind kind() const override { return IoKind::kThreads; }

  int submit(const IoOp& op) override {
    try {
      std::lock_guard lock(mu_);
      queue_.push_back(op);
    } catch (const std::bad_alloc&) {
      return fail(PD3_E_NOMEM, "tier I/O queue: out of memory");
    }
    work_cv_.notify_one();
    return PD3_OK;
  }

  void reap(std::vector<IoCompletion>* out) override {
    uint64_t count = 0;
    // Cleared before the list is taken: a completion posted after this read re-arms the eventfd.
    while (::read(event_.get(), &count, sizeof count) < 0 && errno == EINTR) {
    }
    std::lock_guard lock(mu_);
    out->insert(out->end(), done_.begin(), done_.end());
    done_.clear();
  }

  int completion_fd() const override { return event_.get(); }

 private:
  void work() {
    for (;;) {
      IoOp op;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping with nothing left to do
        op = queue_.front();
        queue_.pop_front();
      }
      const int injected = fault_ ? fault_(op) : 0;
      const int64_t result = injected < 0 ? injected : transfer(op);
      {
        std::lock_guard lock(mu_);
        done_.push_back({op.tag, result});
      }
      const uint64_t one = 1;
      while (::write(event_.get(), &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  }

  UniqueFd event_;
  IoFault fault_;
  std::mutex mu_;  // guards queue_, done_, stopping_
  std::condition_variable work_cv_;
  std::deque<IoOp> queue_;
  std::vector<IoCompletion> done_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

int make_thread_io(uint32_t threads, IoFault fault, std::unique_ptr<TierIo>* out) {
  if (threads == 0) return fail(PD3_E_INVAL, "the tier's I/O thread pool needs at least one thread");
  UniqueFd event(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event.valid()) return fail(PD3_E_SYS, "eventfd: %s", strerror(errno));
  auto io = std::make_unique<ThreadIo>(std::move(event), std::move(fault));
  if (int rc = io->start(threads); rc != PD3_OK) return rc;
  *out = std::move(io);
  return PD3_OK;
}

const char* io_kind_name(IoKind kind) { return kind == IoKind::kUring ? "uring" : "threads"; }

bool parse_io_kind(const std::string& name, IoKind* out) {
  if (name == "uring") *out = IoKind::kUring;
  else if (name == "threads") *out = IoKind::kThreads;
  else return false;
  return true;
}

// Four threads: enough to keep an SSD's queue busy for page-sized transfers without crowding the
// two-core machines the tier is tested on.
int make_tier_io(IoKind kind, std::unique_ptr<TierIo>* out) {
  return kind == IoKind::kUring ? make_uring_io(256, out) : make_thread_io(4, nullptr, out);
}

}  // namespace pd3::tier
