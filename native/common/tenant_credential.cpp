// tenant_credential.cpp — see tenant_credential.hpp.
#include "common/tenant_credential.hpp"

#include "common/sha256.hpp"
#include "pd3/transport.h"

namespace pd3 {

bool valid_tenant_name(std::string_view tenant) {
  if (tenant.size() > PD3_TENANT_MAX) return false;
  for (const char c : tenant) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string tenant_credential(std::string_view cluster_token, std::string_view tenant) {
  if (tenant.empty()) return std::string(cluster_token);
  std::string message = PD3_TENANT_CREDENTIAL_CONTEXT;
  message.append(tenant);
  const Sha256Digest mac = hmac_sha256(cluster_token, message);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * mac.size());
  for (const uint8_t b : mac) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

}  // namespace pd3
