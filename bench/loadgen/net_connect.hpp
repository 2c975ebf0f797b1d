// net_connect.hpp — opening the load generator's TCP connections.
#pragma once

#include <cstdint>
#include <string>

#include "common/unique_fd.hpp"

namespace pd3::loadgen {

// Connects to host:port (name or address) within timeout_ms; the socket is non-blocking with
// TCP_NODELAY. Empty on failure, with "connect to HOST:PORT: reason" in *error.
[[nodiscard]] UniqueFd connect_tcp(const std::string& host, uint16_t port, int timeout_ms, std::string* error);

}  // namespace pd3::loadgen
