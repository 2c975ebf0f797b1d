// sha256.hpp — SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for tenant credentials
// (tenant_credential.hpp). Small inputs only: a credential check hashes a few dozen bytes once per
// connection, so this favours plainness over speed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pd3 {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental SHA-256 over byte strings.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest of everything given; the object must not be updated afterwards.
  Sha256Digest finish();

 private:
  void compress(const uint8_t block[64]);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t block_len_ = 0;
  uint64_t total_len_ = 0;
};

// HMAC-SHA-256 of `message` under `key`.
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

}  // namespace pd3
