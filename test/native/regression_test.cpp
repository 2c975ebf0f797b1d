// regression_test.cpp — cases for library bugs found in review: each failed before its fix.
#include <sys/stat.h>

#include <cstring>
#include <string>

#include "common/segment.hpp"
#include "dpu/agent_session.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

// Creates a default-sized segment named `name`; returns the handle or nullptr.
pd3_host* create(const std::string& name, bool replace) {
  pd3_host_config cfg{};
  cfg.name = name.c_str();
  cfg.flags = replace ? PD3_HOST_REPLACE : 0;
  pd3_host* h = nullptr;
  return pd3_host_create(&cfg, &h) == PD3_OK ? h : nullptr;
}

}  // namespace

TEST(regression_closing_a_replaced_creator_keeps_the_new_segment) {
  const std::string name = pd3test::unique_name("replace");
  pd3_host* first = create(name, false);
  REQUIRE(first != nullptr);
  pd3_host* second = create(name, true);
  REQUIRE(second != nullptr);
  pd3_host_close(first);  // must not remove the name, which now belongs to `second`
  struct stat st {};
  CHECK(::stat(("/dev/shm/" + name).c_str(), &st) == 0);
  pd3_host* again = nullptr;
  CHECK_EQ(pd3_host_attach(name.c_str(), &again), PD3_OK);
  // The attach joined `second`'s core (same process): it may issue requests.
  if (again) {
    pd3test::fake_agent_beat(pd3_host_control(again));
    CHECK(pd3_host_read(again, 1, 0, 8, &st, 0) >= 0);
  }
  pd3_host_close(again);
  pd3_host_close(second);
  CHECK(::stat(("/dev/shm/" + name).c_str(), &st) != 0);
}

TEST(regression_agent_refuses_impossible_cursors) {
  struct Case {
    const char* what;
    uint64_t pd3_control::*field;
    uint64_t value;
  };
  const Case cases[] = {
      {"request ring", &pd3_control::req_head, 1u << 20},         // head past tail
      {"request ring", &pd3_control::req_tail, 1ull << 40},       // more in flight than fits
      {"response ring", &pd3_control::resp_tail, 1ull << 40},
      {"loading zone items", &pd3_control::lz_head_seq, 1000},    // head seq past tail seq
      {"loading zone data", &pd3_control::lz_data_tail, 1ull << 40},
  };
  for (const Case& c : cases) {
    pd3test::ScopedHost host("cursor");
    REQUIRE(host.rc == PD3_OK);
    host.control()->*c.field = c.value;
    std::unique_ptr<pd3::AgentSession> agent;
    CHECK_EQ(pd3::AgentSession::attach(host.name.c_str(), &agent), PD3_E_BAD_LAYOUT);
    CHECK(std::strstr(pd3_last_error(), c.what) != nullptr);
  }
  pd3test::ScopedHost fine("cursor");
  std::unique_ptr<pd3::AgentSession> agent;
  CHECK_EQ(pd3::AgentSession::attach(fine.name.c_str(), &agent), PD3_OK);
}

TEST(regression_control_completions_report_the_right_region) {
  pd3test::ScopedHost host("ctl");
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent) == PD3_OK);
  const uint32_t released = 0x9C40002Au;  // server 40000, local 42: all 32 bits must come back
  REQUIRE(pd3_host_deallocate(host.h, released, 7) >= 0);
  REQUIRE(pd3_host_allocate(host.h, 4096, 8) >= 0);
  // Deallocate succeeds with an 8-byte reply it does not need; a failed allocate has no region.
  agent->take_requests(16, [&](const pd3::RequestView& v) {
    const pd3_alloc_reply junk{9, 9};
    if (v.hdr.region == PD3_CTL_DEALLOCATE) agent->respond(v.hdr.op_id, PD3_OK, &junk, sizeof junk);
    else agent->respond(v.hdr.op_id, PD3_E_NOSPACE, nullptr, 0);
  });
  pd3_completion c[4];
  REQUIRE(pd3_host_poll(host.h, c, 4) == 2);
  for (const pd3_completion& x : c) {
    if (&x == c + 2) break;
    if (x.user_data == 7) {
      CHECK_EQ(x.status, PD3_OK);
      CHECK_EQ(x.region, released);  // the released region, not a field of the reply
    } else {
      CHECK_EQ(x.status, PD3_E_NOSPACE);
      CHECK_EQ(x.region, 0);
    }
  }
}
