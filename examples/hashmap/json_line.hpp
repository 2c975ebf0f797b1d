// json_line.hpp — one-line JSON objects in the project's log format (cli/logger.ts):
// {"ts","level","component","event","msg",...fields}, written with a single write(2) so lines
// from different threads never interleave. Logs go to stderr; the ready and stats lines to stdout.
#pragma once

#include <cstdint>
#include <string>

namespace pd3::hashmap {

// Severity, lowest first (as in cli/logger.ts).
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Builds one JSON object line.
class JsonLine {
 public:
  JsonLine(LogLevel level, const char* event, const std::string& msg);

  JsonLine& field(const char* name, const std::string& value);
  JsonLine& field(const char* name, const char* value) { return field(name, std::string(value)); }
  JsonLine& field(const char* name, uint64_t value);
  // `fields` is already `"a":1,"b":2` text.
  JsonLine& raw_fields(const std::string& fields);

  // Writes the line (with its newline) to `fd` in one call.
  void write_to(int fd) const;

  static std::string quote(const std::string& s);

 private:
  // Appends `,"name":`.
  void name(const char* name);

  std::string text_;
};

// The process's log threshold and the stderr writer.
class Log {
 public:
  static void set_level(LogLevel level);
  static bool enabled(LogLevel level);
  // Writes `line` to stderr if its level passes the threshold.
  static void write(LogLevel level, const JsonLine& line);
};

}  // namespace pd3::hashmap
