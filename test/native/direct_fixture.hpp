// direct_fixture.hpp — what the direct-mode tests share: a direct-mode host segment, waiting for
// one completion, and allocating a region.
#pragma once

#include <string>

#include "fake_memserver.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace pd3test::direct {

// A host segment whose requests go directly to `servers` ("host:port,...").
struct DirectHost {
  pd3_host* h = nullptr;
  int rc;
  DirectHost(const std::string& servers, const char* token, uint32_t flags = PD3_HOST_DIRECT_ONLY,
             uint32_t fallback = PD3_FALLBACK_FAIL, uint32_t placement = PD3_PLACEMENT_P2C, uint32_t refraction_ms = 0,
             uint32_t publish_batch = 0) {
    const std::string name = pd3test::unique_name("direct");
    pd3_host_config cfg{};
    cfg.name = name.c_str();
    cfg.flags = flags;
    cfg.fallback = fallback;
    cfg.direct_servers = servers.c_str();
    cfg.direct_token = token;
    cfg.direct_timeout_ms = 500;
    cfg.direct_placement = placement;
    cfg.direct_refraction_ms = refraction_ms;
    cfg.publish_batch = publish_batch;
    rc = pd3_host_create(&cfg, &h);
  }
  ~DirectHost() { pd3_host_close(h); }
};

// Waits (bounded) for the completion of one request; returns its status.
inline int await(pd3_host* h, pd3_completion* c) {
  for (int i = 0; i < 10000; ++i) {
    if (pd3_host_poll(h, c, 1) == 1) return c->status;
    pd3_host_wait(h, 1000);
  }
  return 1;  // no completion: the CHECK on the status fails
}

inline std::string at(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// Allocates a region of `bytes` through `h` and waits for it; its id (REQUIREs success).
inline uint32_t allocate_region(pd3_host* h, uint32_t bytes) {
  pd3_completion c{};
  REQUIRE(pd3_host_allocate(h, bytes, 1) >= 0);
  REQUIRE(await(h, &c) == PD3_OK);
  return c.region;
}

// Starts `s` and returns its port (REQUIREs that it started).
inline uint16_t started(pd3test::FakeMemServer& s) {
  REQUIRE(s.start());
  return s.port();
}

}  // namespace pd3test::direct
