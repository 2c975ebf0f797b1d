// remote_setup.hpp — what the server does with remote memory before it serves: waits for the
// agent (pd3 modes), allocates the regions the slots live in, bulk-loads the records (written
// through the host library, so the memory server indexes them and the agent sees the flushes),
// keeps the cache-size subset locally and reads that subset back to check the load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hash_table.hpp"
#include "pd3/host.h"

namespace pd3::hashmap {

// Waits until the agent's heartbeat is fresh. PD3_OK or PD3_E_AGENT_DOWN after `timeout_ms`.
int wait_for_agent(pd3_host* host, uint32_t timeout_ms);

// Allocates `count` regions of `bytes` each, retrying while no memory server is reachable yet
// (the agent may still be connecting) for up to `timeout_ms`. PD3_OK or the failure.
int allocate_regions(pd3_host* host, uint32_t count, uint32_t bytes, uint32_t timeout_ms,
                     std::vector<uint32_t>* regions);

// Gives the regions back (at shutdown), waiting up to `timeout_ms` for the answers. The memory
// server then drops their keys from its index: a later table on the same servers never gets this
// one's records from a prefetch. PD3_OK or the first failure.
int release_regions(pd3_host* host, const std::vector<uint32_t>& regions, uint32_t timeout_ms);

// Loads keys 0..records-1 (value load_value(key)): places every key, writes all occupied slots to
// remote memory in runs, caches every (records / cache capacity)-th record clean, and reads the
// cached records back to compare. PD3_OK, or the failure (reason in *why).
int bulk_load(pd3_host* host, HashTable& table, uint64_t records, std::string* why);

// Local mode: every record into the cache.
int local_load(HashTable& table, uint64_t records, std::string* why);

}  // namespace pd3::hashmap
