// host_config_size_test.cpp — pd3_host_create_sized: a config from a newer header is taken when the
// fields this library does not know are 0 and refused when one is set; a size below the first
// config's is refused; C sees the same struct and creates a segment through the inline wrapper.
#include <cstring>
#include <string>

#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

extern "C" int pd3_c_create_and_close(const char* name);
extern "C" size_t pd3_c_config_size(void);

namespace {

// A config as a program built against a newer pd3/host.h would pass it: two more fields.
struct NewerConfig {
  pd3_host_config known;
  uint32_t added_later = 0;
  uint32_t added_later_too = 0;
};

bool error_mentions(const char* what) { return std::string(pd3_last_error()).find(what) != std::string::npos; }

}  // namespace

TEST(host_config_from_a_newer_header_with_new_fields_zero_is_taken) {
  const std::string name = pd3test::unique_name("cfg-newer");
  NewerConfig cfg{};
  cfg.known.name = name.c_str();
  cfg.known.publish_batch = PD3_MAX_PUBLISH_BATCH + 1;  // the known fields are read: this is refused
  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_create_sized(&cfg.known, sizeof cfg, &h), PD3_E_INVAL);
  CHECK(error_mentions("publish_batch"));
  cfg.known.publish_batch = 0;
  REQUIRE(pd3_host_create_sized(&cfg.known, sizeof cfg, &h) == PD3_OK);
  CHECK(pd3_host_control(h) != nullptr);
  pd3_host_close(h);
}

TEST(host_config_that_sets_a_field_this_library_does_not_know_is_refused) {
  const std::string name = pd3test::unique_name("cfg-unknown");
  NewerConfig cfg{};
  cfg.known.name = name.c_str();
  cfg.added_later_too = 1;
  pd3_host* h = nullptr;
  CHECK_EQ(pd3_host_create_sized(&cfg.known, sizeof cfg, &h), PD3_E_INVAL);
  CHECK(h == nullptr);
  CHECK(error_mentions("newer pd3/host.h"));
  CHECK(error_mentions(std::to_string(sizeof(pd3_host_config) + 4).c_str()));  // the byte it found set
  // Nothing was created: the same name is free.
  cfg.added_later_too = 0;
  REQUIRE(pd3_host_create_sized(&cfg.known, sizeof cfg, &h) == PD3_OK);
  pd3_host_close(h);
}

TEST(host_config_size_below_the_first_config_is_refused) {
  const std::string name = pd3test::unique_name("cfg-small");
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  pd3_host* h = nullptr;
  for (const size_t size : {size_t{0}, size_t{8}, sizeof cfg - 1}) {
    CHECK_EQ(pd3_host_create_sized(&cfg, size, &h), PD3_E_INVAL);
    CHECK(h == nullptr);
    CHECK(error_mentions("config_size"));
  }
  CHECK_EQ(pd3_host_create_sized(nullptr, sizeof cfg, &h), PD3_E_INVAL);
  CHECK_EQ(pd3_host_create_sized(&cfg, sizeof cfg, nullptr), PD3_E_INVAL);
}

TEST(host_create_from_c_sees_the_same_config) {
  CHECK_EQ(pd3_c_config_size(), sizeof(pd3_host_config));
  const std::string name = pd3test::unique_name("cfg-c");
  CHECK_EQ(pd3_c_create_and_close(name.c_str()), PD3_OK);
  CHECK_EQ(pd3_c_create_and_close("bad/name"), PD3_E_INVAL);
}
