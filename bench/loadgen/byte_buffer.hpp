// byte_buffer.hpp — a growable byte buffer with a consumed prefix: requests are appended at the
// tail and sent from the head; received bytes are appended and parsed from the head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace pd3::loadgen {

// Bytes [head, tail) are live; append() grows the storage (doubling), compacting first.
class ByteBuffer {
 public:
  explicit ByteBuffer(size_t initial = 16384) : data_(new uint8_t[initial]), capacity_(initial) {}

  const uint8_t* data() const { return data_.get() + head_; }
  size_t size() const { return tail_ - head_; }
  bool empty() const { return tail_ == head_; }

  // Room for at least n more bytes at the tail; returns where they go (commit() them after).
  uint8_t* reserve(size_t n) {
    if (capacity_ - tail_ < n) make_room(n);
    return data_.get() + tail_;
  }
  void commit(size_t n) { tail_ += n; }
  // Free bytes at the tail without growing.
  size_t spare() const { return capacity_ - tail_; }

  void append(const void* p, size_t n) {
    std::memcpy(reserve(n), p, n);
    tail_ += n;
  }
  void append_byte(uint8_t b) {
    *reserve(1) = b;
    ++tail_;
  }

  // Drops n bytes from the head.
  void consume(size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }
  void clear() { head_ = tail_ = 0; }

 private:
  void make_room(size_t n) {
    const size_t live = tail_ - head_;
    if (head_ > 0 && capacity_ - live >= n && live <= capacity_ / 2) {
      std::memmove(data_.get(), data_.get() + head_, live);  // compact: enough room once moved down
    } else {
      size_t cap = capacity_ * 2;
      while (cap - live < n) cap *= 2;
      std::unique_ptr<uint8_t[]> grown(new uint8_t[cap]);
      std::memcpy(grown.get(), data_.get() + head_, live);
      data_ = std::move(grown);
      capacity_ = cap;
    }
    head_ = 0;
    tail_ = live;
  }

  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_;
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace pd3::loadgen
