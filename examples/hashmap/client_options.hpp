// client_options.hpp — pd3_hashmap_client's command line. A bad command line prints one line
// naming the flag and exits 2.
#pragma once

#include <cstdint>
#include <string>

namespace pd3::hashmap {

// How keys are chosen.
enum class KeyOrder { kDefault, kUniform, kZipfian, kLatest, kSequential, kSlotOrder };

// Everything the client was asked to do.
struct ClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  uint32_t connections = 4;
  uint32_t threads = 1;
  uint32_t depth = 8;         // requests in flight per connection
  uint32_t batch = 1;         // entries per request
  uint64_t records = 0;       // keys 0..records-1 were loaded by the server
  uint64_t requests = 100000; // in total, over all connections
  double seconds = 0;         // > 0: stop issuing after this long
  char workload = 'B';        // YCSB core workload (A, B, C, D, F)
  KeyOrder order = KeyOrder::kDefault;
  double theta = 0.99;
  uint64_t seed = 1;
  bool verify = false;
  uint32_t mix_get = 50, mix_put = 30, mix_del = 20;  // verify: op weights
  uint64_t key_range = 0;     // verify: keys 0..key_range-1 (default records + records/8 + connections)
  uint64_t slots = 0;         // slot-order: the server's table size (its ready line's "slots")
  bool sweep = true;          // verify: read every key back at the end
};

// Parses argv. --help prints the usage and exits 0; a bad command line exits 2.
ClientOptions parse_client_options(int argc, char** argv);

}  // namespace pd3::hashmap
