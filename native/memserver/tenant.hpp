// tenant.hpp — the tenant a memory-server connection acts for (set by its hello): whose regions it
// may touch, and the salt that gives the tenant its own key space in the shared key index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memserver/key_hash.hpp"

namespace pd3 {

// A tenant as the store sees it.
struct Tenant {
  std::string name;      // "" = the default tenant (clients that name none)
  uint64_t key_salt = 0; // XORed into the key hashes of this tenant's index entries; 0 for the default tenant

  static Tenant named(std::string_view name) {
    Tenant t;
    t.name = name;
    // Keyed by name so equal names share a key space across restarts; the default tenant keeps
    // salt 0, so index files written before tenants existed still answer for it.
    if (!name.empty()) t.key_salt = key_hash64(name.data(), name.size()) | 1u;
    return t;
  }
  // The index key of `key` for this tenant.
  uint64_t key_hash(const void* key, size_t len) const { return key_hash64(key, len) ^ key_salt; }
};

}  // namespace pd3
