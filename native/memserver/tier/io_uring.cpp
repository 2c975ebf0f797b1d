// io_uring.cpp — the io_uring TierIo, through the raw syscalls (<linux/io_uring.h>; no liburing):
// one submission per op, completions signalled on a registered eventfd.
#include <linux/io_uring.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "memserver/tier/tier_io.hpp"
#include "pd3/status.h"

namespace pd3::tier {

namespace {

int sys_setup(unsigned entries, io_uring_params* p) { return int(syscall(__NR_io_uring_setup, entries, p)); }
int sys_enter(int fd, unsigned submit, unsigned wait, unsigned flags) {
  return int(syscall(__NR_io_uring_enter, fd, submit, wait, flags, nullptr, 0));
}
int sys_register(int fd, unsigned op, const void* arg, unsigned n) {
  return int(syscall(__NR_io_uring_register, fd, op, arg, n));
}

// A mapped part of the ring (RAII).
struct RingMap {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  ~RingMap() {
    if (base != MAP_FAILED) munmap(base, bytes);
  }
  uint32_t* u32(uint32_t off) const { return reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(base) + off); }
};

// The ring and its bookkeeping; ops that find the ring full wait in backlog_.
class UringIo final : public TierIo {
 public:
  ~UringIo() override {
    // The kernel may still be writing into frames the owner is about to free: wait for every op.
    while (in_flight_ > 0 || !backlog_.empty()) {
      flush_backlog();
      if (in_flight_ > 0 && sys_enter(ring_.get(), 0, 1, IORING_ENTER_GETEVENTS) < 0 && errno != EINTR) break;
      std::vector<IoCompletion> ignored;
      drain(&ignored);
    }
  }

  int open(uint32_t entries) {
    io_uring_params p{};
    ring_ = UniqueFd(sys_setup(entries, &p));
    if (!ring_.valid()) {
      const int e = errno;
      if (e == ENOSYS || e == EPERM || e == EACCES)
        return fail(PD3_E_UNAVAILABLE, "io_uring_setup: %s (use --tier-io threads)", strerror(e));
      return fail(PD3_E_SYS, "io_uring_setup: %s", strerror(e));
    }
    if (!(p.features & IORING_FEAT_SINGLE_MMAP))
      return fail(PD3_E_UNAVAILABLE, "io_uring without IORING_FEAT_SINGLE_MMAP (kernel older than 5.4)");
    entries_ = p.sq_entries;
    sq_.bytes = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
    const size_t cq_bytes = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
    if (cq_bytes > sq_.bytes) sq_.bytes = cq_bytes;
    sq_.base = mmap(nullptr, sq_.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_.get(), IORING_OFF_SQ_RING);
    if (sq_.base == MAP_FAILED) return fail(PD3_E_SYS, "mmap io_uring rings: %s", strerror(errno));
    sqes_.bytes = p.sq_entries * sizeof(io_uring_sqe);
    sqes_.base = mmap(nullptr, sqes_.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_.get(), IORING_OFF_SQES);
    if (sqes_.base == MAP_FAILED) return fail(PD3_E_SYS, "mmap io_uring sqes: %s", strerror(errno));
    sq_tail_ = sq_.u32(p.sq_off.tail);
    sq_mask_ = *sq_.u32(p.sq_off.ring_mask);
    sq_array_ = sq_.u32(p.sq_off.array);
    cq_head_ = sq_.u32(p.cq_off.head);
    cq_tail_ = sq_.u32(p.cq_off.tail);
    cq_mask_ = *sq_.u32(p.cq_off.ring_mask);
    cqes_ = reinterpret_cast<io_uring_cqe*>(static_cast<uint8_t*>(sq_.base) + p.cq_off.cqes);
    event_ = UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!event_.valid()) return fail(PD3_E_SYS, "eventfd: %s", strerror(errno));
    const int efd = event_.get();
    if (sys_register(ring_.get(), IORING_REGISTER_EVENTFD, &efd, 1) != 0)
      return fail(PD3_E_SYS, "io_uring_register(EVENTFD): %s", strerror(errno));
    return PD3_OK;
  }

  IoKind kind() const override { return IoKind::kUring; }

  int submit(const IoOp& op) override {
    try {
      backlog_.push_back(op);
    } catch (const std::bad_alloc&) {
      return fail(PD3_E_NOMEM, "tier I/O queue: out of memory");
    }
    flush_backlog();
    return PD3_OK;
  }

  void reap(std::vector<IoCompletion>* out) override {
    uint64_t count = 0;
    // Cleared before the ring is read: a completion posted after this read re-arms the eventfd.
    while (::read(event_.get(), &count, sizeof count) < 0 && errno == EINTR) {
    }
    drain(out);
    flush_backlog();  // completions made room for waiting ops
  }

  int completion_fd() const override { return event_.get(); }

 private:
  // Moves waiting ops into free submission slots, at most entries_ in flight (the completion ring
  // has twice as many slots, so it never overflows), and tells the kernel.
  void flush_backlog() {
    unsigned queued = 0;
    // Relaxed: only this thread writes the tail.
    uint32_t tail = std::atomic_ref<uint32_t>(*sq_tail_).load(std::memory_order_relaxed);
    while (!backlog_.empty() && in_flight_ < entries_) {
      const IoOp& op = backlog_.front();
      const uint32_t slot = tail & sq_mask_;
      io_uring_sqe* sqe = static_cast<io_uring_sqe*>(sqes_.base) + slot;
      std::memset(sqe, 0, sizeof *sqe);
      sqe->opcode = op.kind == IoOp::Kind::kRead ? IORING_OP_READ : op.kind == IoOp::Kind::kWrite ? IORING_OP_WRITE : IORING_OP_FSYNC;
      if (op.kind == IoOp::Kind::kSync) sqe->fsync_flags = IORING_FSYNC_DATASYNC;
      sqe->fd = op.fd;
      sqe->addr = reinterpret_cast<uint64_t>(op.buf);
      sqe->len = op.len;
      sqe->off = op.offset;
      sqe->user_data = op.tag;
      lengths_[op.tag] = op.len;
      sq_array_[slot] = slot;
      ++tail;
      ++in_flight_;
      ++queued;
      backlog_.pop_front();
    }
    if (queued == 0) return;
    // Release: the kernel must see the filled sqes and array entries before the new tail.
    std::atomic_ref<uint32_t>(*sq_tail_).store(tail, std::memory_order_release);
    while (queued > 0) {
      const int n = sys_enter(ring_.get(), queued, 0, 0);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EBUSY) continue;
        break;  // the entries stay in the ring; the next enter submits them
      }
      queued -= unsigned(n) < queued ? unsigned(n) : queued;
      if (n == 0) break;
    }
  }

  void drain(std::vector<IoCompletion>* out) {
    // Relaxed: only this thread moves the head.
    uint32_t head = std::atomic_ref<uint32_t>(*cq_head_).load(std::memory_order_relaxed);
    // Acquire: the cqes up to the tail are written before the kernel publishes it.
    const uint32_t tail = std::atomic_ref<uint32_t>(*cq_tail_).load(std::memory_order_acquire);
    while (head != tail) {
      const io_uring_cqe& cqe = cqes_[head & cq_mask_];
      int64_t result = cqe.res;
      const auto it = lengths_.find(cqe.user_data);
      // A short transfer: backing files cover every page, so it is an error, not a partial page.
      if (it != lengths_.end()) {
        if (result >= 0 && uint64_t(result) != it->second) result = -EIO;
        lengths_.erase(it);
      }
      out->push_back({cqe.user_data, result});
      ++head;
      --in_flight_;
    }
    // Release: the kernel may reuse the cqe slots only after we have read them.
    std::atomic_ref<uint32_t>(*cq_head_).store(head, std::memory_order_release);
  }

  UniqueFd ring_, event_;
  RingMap sq_, sqes_;
  uint32_t *sq_tail_ = nullptr, *sq_array_ = nullptr, *cq_head_ = nullptr, *cq_tail_ = nullptr;
  uint32_t sq_mask_ = 0, cq_mask_ = 0, entries_ = 0, in_flight_ = 0;
  io_uring_cqe* cqes_ = nullptr;
  std::deque<IoOp> backlog_;
  std::unordered_map<uint64_t, uint32_t> lengths_;  // tag -> bytes asked, of ops in flight
};

}  // namespace

int make_uring_io(uint32_t entries, std::unique_ptr<TierIo>* out) {
  if (entries == 0 || (entries & (entries - 1)) != 0) return fail(PD3_E_INVAL, "io_uring entries %u: not a power of two", entries);
  auto io = std::make_unique<UringIo>();
  if (int rc = io->open(entries); rc != PD3_OK) return rc;
  *out = std::move(io);
  return PD3_OK;
}

}  // namespace pd3::tier
