// json_line.cpp — JSON escaping, ISO 8601 timestamps, one write per line.
#include "json_line.hpp"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace pd3::hashmap {

namespace {

// The threshold, set once at start.
std::atomic<int> g_level{int(LogLevel::kInfo)};

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    default: return "error";
  }
}

std::string iso_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ts.tv_nsec / 1000000);
  return buf;
}

}  // namespace

std::string JsonLine::quote(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

JsonLine::JsonLine(LogLevel level, const char* event, const std::string& msg) {
  text_ = "{\"ts\":" + quote(iso_now()) + ",\"level\":\"" + level_name(level) +
          "\",\"component\":\"hashmap\",\"event\":" + quote(event) + ",\"msg\":" + quote(msg);
}

void JsonLine::name(const char* name) {
  text_ += ',';
  text_ += quote(name);
  text_ += ':';
}

JsonLine& JsonLine::field(const char* name, const std::string& value) {
  this->name(name);
  text_ += quote(value);
  return *this;
}

JsonLine& JsonLine::field(const char* name, uint64_t value) {
  this->name(name);
  text_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::raw_fields(const std::string& fields) {
  if (!fields.empty()) {
    text_ += ',';
    text_ += fields;
  }
  return *this;
}

void JsonLine::write_to(int fd) const {
  const std::string line = text_ + "}\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n <= 0) return;  // stdout or stderr closed: nothing left to tell
    done += size_t(n);
  }
}

// relaxed (both): a setting written before any thread starts, not a synchronisation point.
void Log::set_level(LogLevel level) { g_level.store(int(level), std::memory_order_relaxed); }

bool Log::enabled(LogLevel level) { return int(level) >= g_level.load(std::memory_order_relaxed); }

void Log::write(LogLevel level, const JsonLine& line) {
  if (enabled(level)) line.write_to(STDERR_FILENO);
}

}  // namespace pd3::hashmap
