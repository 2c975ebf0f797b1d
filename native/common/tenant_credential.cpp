// tenant_credential.cpp — see tenant_credential.hpp.
#include "common/tenant_credential.hpp"

#include "common/error.hpp"
#include "common/name_chars.hpp"
#include "common/sha256.hpp"
#include "pd3/status.h"
#include "pd3/transport.h"

namespace pd3 {

bool valid_tenant_name(std::string_view tenant) {
  if (tenant.size() > PD3_TENANT_MAX) return false;
  for (const char c : tenant)
    if (!is_name_char(c)) return false;
  return true;
}

int check_tenant_name(const char* what, std::string_view tenant) {
  if (valid_tenant_name(tenant)) return PD3_OK;
  return fail(PD3_E_INVAL, "%s '%.*s' is not 0..%u characters of [A-Za-z0-9._-]", what, int(tenant.size()), tenant.data(),
              PD3_TENANT_MAX);
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
