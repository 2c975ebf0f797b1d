// main.cpp — pd3_hashmap: the PD3 paper's hash map as a TCP server (README.md).
#include "server.hpp"

int main(int argc, char** argv) {
  using namespace pd3::hashmap;
  const ServerOptions options = parse_server_options(argc, argv);
  Log::set_level(options.log_level);
  block_stop_signals();  // before any thread exists, so only the control loop takes them
  Server server(options);
  if (server.start() != PD3_OK) return 1;
  server.run();
  return 0;
}
