// tenant_credential.hpp — tenant names and the credentials derived from the cluster token
// (pd3/transport.h, pd3_hello): what admits a connection to one tenant's regions and keys.
#pragma once

#include <string>
#include <string_view>

namespace pd3 {

// True for the default tenant ("") and for 1..PD3_TENANT_MAX bytes of [A-Za-z0-9._-].
[[nodiscard]] bool valid_tenant_name(std::string_view tenant);
// PD3_OK for a valid tenant name, else PD3_E_INVAL naming `what` (the setting) in pd3_last_error.
[[nodiscard]] int check_tenant_name(const char* what, std::string_view tenant);

// The credential of `tenant` under `cluster_token`: lowercase hex of
// HMAC-SHA-256(cluster_token, PD3_TENANT_CREDENTIAL_CONTEXT + tenant). For the default tenant the
// credential is the cluster token itself.
std::string tenant_credential(std::string_view cluster_token, std::string_view tenant);

}  // namespace pd3
