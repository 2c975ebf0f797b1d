// tenant_credential_test.cpp — SHA-256 and HMAC-SHA-256 against published vectors, tenant names and
// credentials, and the hello's tenant field: every way a hello may name a tenant or fail to.
#include <cstring>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "common/tenant_credential.hpp"
#include "common/transport_codec.hpp"
#include "harness.hpp"
#include "pd3/status.h"

namespace {

std::string hex(const pd3::Sha256Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

std::string sha256_hex(const std::string& message) {
  pd3::Sha256 h;
  h.update(message);
  return hex(h.finish());
}

// The body of a hello frame (the frame header stripped).
std::vector<uint8_t> hello_body(const std::string& token, const std::string& tenant) {
  std::vector<uint8_t> frame;
  REQUIRE(pd3::encode_hello(token, tenant, 0, &frame));
  return std::vector<uint8_t>(frame.begin() + sizeof(pd3_frame), frame.end());
}

int check(const std::vector<uint8_t>& body, const std::string& cluster_token, std::string* tenant) {
  uint16_t flags = 0;
  return pd3::check_hello(body.data(), body.size(), cluster_token, tenant, &flags);
}

}  // namespace

TEST(sha256_published_vectors) {
  // FIPS 180-4 examples (one block, two blocks) and the empty message.
  CHECK(sha256_hex("") == std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  CHECK(sha256_hex("abc") == std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
  // A million 'a's, fed in uneven pieces: the block buffering across update() calls.
  pd3::Sha256 h;
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed + piece.size() <= 1000000) h.update(piece), fed += piece.size();
  h.update(std::string(1000000 - fed, 'a'));
  CHECK(hex(h.finish()) == std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

TEST(hmac_sha256_rfc4231_vectors) {
  // RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
  CHECK(hex(pd3::hmac_sha256(std::string(20, '\x0b'), "Hi There")) == std::string("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
  CHECK(hex(pd3::hmac_sha256("Jefe", "what do ya want for nothing?")) == std::string("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
  CHECK(hex(pd3::hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) == std::string("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
}

TEST(tenant_names_and_credentials) {
  CHECK(pd3::valid_tenant_name(""));
  CHECK(pd3::valid_tenant_name("app-1.prod_A"));
  CHECK(pd3::valid_tenant_name(std::string(PD3_TENANT_MAX, 'x')));
  CHECK(!pd3::valid_tenant_name(std::string(PD3_TENANT_MAX + 1, 'x')));
  for (const char* bad : {"a b", "a/b", "a@b", "caf\xc3\xa9", "tab\t"}) CHECK(!pd3::valid_tenant_name(bad));
  CHECK(!pd3::valid_tenant_name(std::string("nul\0x", 5)));
  // The default tenant's credential is the cluster token; a named tenant's is 64 hex digits that
  // depend on both the token and the name.
  CHECK(pd3::tenant_credential("secret", "") == std::string("secret"));
  const std::string a = pd3::tenant_credential("secret", "alpha");
  CHECK_EQ(a.size(), size_t(PD3_TENANT_CREDENTIAL_LEN));
  CHECK(a == hex(pd3::hmac_sha256("secret", std::string(PD3_TENANT_CREDENTIAL_CONTEXT) + "alpha")));
  CHECK(a != pd3::tenant_credential("secret", "beta"));
  CHECK(a != pd3::tenant_credential("other-secret", "alpha"));
}

TEST(hello_admits_a_tenant_only_with_its_credential) {
  const std::string secret = "cluster-secret";
  std::string tenant = "unset";
  CHECK_EQ(check(hello_body(secret, ""), secret, &tenant), PD3_OK);
  CHECK(tenant == std::string(""));
  CHECK_EQ(check(hello_body(pd3::tenant_credential(secret, "alpha"), "alpha"), secret, &tenant), PD3_OK);
  CHECK(tenant == std::string("alpha"));
  // Refused: another tenant's credential, the cluster token for a named tenant, a credential under
  // another secret, a credential cut short or with one digit changed.
  std::string cred = pd3::tenant_credential(secret, "alpha");
  std::string flipped = cred;
  flipped[10] = flipped[10] == '0' ? '1' : '0';
  for (const auto& [token, name] : std::vector<std::pair<std::string, std::string>>{
           {pd3::tenant_credential(secret, "beta"), "alpha"},
           {secret, "alpha"},
           {pd3::tenant_credential("other", "alpha"), "alpha"},
           {cred.substr(0, 63), "alpha"},
           {flipped, "alpha"},
           {cred, ""}}) {
    tenant = "unset";
    CHECK_EQ(check(hello_body(token, name), secret, &tenant), PD3_E_AUTH);
    CHECK(tenant == std::string("unset"));
  }
  // A server without a cluster token authenticates nobody: tenants only keep data apart, and any
  // token presented is refused, as before tenants.
  CHECK_EQ(check(hello_body("", "alpha"), "", &tenant), PD3_OK);
  CHECK(tenant == std::string("alpha"));
  CHECK_EQ(check(hello_body(cred, "alpha"), "", &tenant), PD3_E_AUTH);
}

TEST(hello_bad_tenant_fields) {
  std::vector<uint8_t> out;
  CHECK(!pd3::encode_hello("t", "bad name", 0, &out));
  CHECK(!pd3::encode_hello("t", std::string(PD3_TENANT_MAX + 1, 'a'), 0, &out));
  CHECK(out.empty());
  const std::vector<uint8_t> good = hello_body("t", "");
  std::string tenant;
  auto with = [&](auto edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    return check(b, "t", &tenant);
  };
  // tenant_len past the frame, over the limit, an unknown flag, an invalid name.
  CHECK_EQ(with([](std::vector<uint8_t>& b) { b[offsetof(pd3_hello, tenant_len)] = 3; }), PD3_E_PROTOCOL);
  CHECK_EQ(with([](std::vector<uint8_t>& b) {
             b[offsetof(pd3_hello, tenant_len)] = PD3_TENANT_MAX + 1;
             b.resize(b.size() + PD3_TENANT_MAX + 1, 'a');
           }),
           PD3_E_PROTOCOL);
  CHECK_EQ(with([](std::vector<uint8_t>& b) { b[offsetof(pd3_hello, flags)] = 2; }), PD3_E_PROTOCOL);
  CHECK_EQ(with([](std::vector<uint8_t>& b) { b[offsetof(pd3_hello, flags) + 1] = 0x80; }), PD3_E_PROTOCOL);
  // PD3_HELLO_ANY_ORDER is known: accepted and reported.
  CHECK_EQ(with([](std::vector<uint8_t>& b) { b[offsetof(pd3_hello, flags)] = PD3_HELLO_ANY_ORDER; }), PD3_OK);
  uint16_t flags = 0;
  std::vector<uint8_t> any_order;
  REQUIRE(pd3::encode_hello("t", "", PD3_HELLO_ANY_ORDER, &any_order));
  CHECK_EQ(pd3::check_hello(any_order.data() + sizeof(pd3_frame), any_order.size() - sizeof(pd3_frame), "t", &tenant,
                            &flags),
           PD3_OK);
  CHECK_EQ(flags, PD3_HELLO_ANY_ORDER);
  std::vector<uint8_t> unknown;
  CHECK(!pd3::encode_hello("t", "", 4, &unknown));
  CHECK_EQ(with([](std::vector<uint8_t>& b) {
             b[offsetof(pd3_hello, tenant_len)] = 3;
             b.insert(b.end(), {'a', '/', 'b'});
           }),
           PD3_E_PROTOCOL);
  // Short of the fixed part.
  std::vector<uint8_t> shorter(good.begin(), good.begin() + sizeof(pd3_hello) - 1);
  CHECK_EQ(check(shorter, "t", &tenant), PD3_E_PROTOCOL);
  // A version-1 hello (8 bytes: magic, version 1, token_len; then a 1-byte token): told its
  // version, though its layout is not this one's.
  std::vector<uint8_t> v1(good.begin(), good.begin() + 8);
  v1[offsetof(pd3_hello, version)] = 1;
  v1[offsetof(pd3_hello, token_len)] = 1;
  v1.push_back('t');
  CHECK_EQ(check(v1, "t", &tenant), PD3_E_BAD_VERSION);
  v1.resize(4);  // not even a version
  CHECK_EQ(check(v1, "t", &tenant), PD3_E_PROTOCOL);
}
