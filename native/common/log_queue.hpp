// log_queue.hpp — structured log events from native threads, collected by the TS process that
// owns them (it prints them as JSON lines). Bounded: when full, new events are counted and dropped.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace pd3 {

// Severity of a log event.
enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };

inline const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    default: return "error";
  }
}

// One event: a level, a short event name ("conn.refused") and a human-readable message.
struct LogEvent {
  LogLevel level;
  std::string event;
  std::string message;
};

// A thread-safe bounded queue of log events.
class LogQueue {
 public:
  explicit LogQueue(size_t capacity = 4096) : capacity_(capacity) {}

  [[gnu::format(printf, 4, 5)]] void log(LogLevel level, const char* event, const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::lock_guard lock(mu_);
    if (events_.size() >= capacity_) {
      ++dropped_;
      return;
    }
    events_.push_back(LogEvent{level, event, buf});
  }

  // Moves every queued event out; `dropped` gets the number lost to a full queue since last time.
  std::vector<LogEvent> take(uint64_t* dropped) {
    std::lock_guard lock(mu_);
    std::vector<LogEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    *dropped = dropped_;
    dropped_ = 0;
    return out;
  }

 private:
  std::mutex mu_;
  std::deque<LogEvent> events_;
  size_t capacity_;
  uint64_t dropped_ = 0;
};

}  // namespace pd3
