// link_table_test.cpp — LinkTable (native/dpu/link_table.hpp), the Transfer Engine's links by
// index: installing and replacing a link resets what was remembered of its index, server ids map
// to the link serving them until forgotten, and the snapshot follows refresh and set_last_error.
// The links are real ServerLinks that never connect (nothing calls connect_if_due).
#include <sys/epoll.h>

#include <memory>

#include "common/unique_fd.hpp"
#include "dpu/link_table.hpp"
#include "harness.hpp"

namespace {

using pd3::Endpoint;
using pd3::LinkOptions;
using pd3::LinkTable;
using pd3::ServerLink;

Endpoint endpoint(uint16_t port) {
  Endpoint e;
  e.host = "127.0.0.1";
  e.port = port;
  return e;
}

std::unique_ptr<ServerLink> link_to(uint16_t port, size_t index, int epoll_fd) {
  return std::make_unique<ServerLink>(endpoint(port), uint32_t(index), epoll_fd, LinkOptions{});
}

TEST(link_table_install_appends_and_replacing_resets_the_index) {
  pd3::UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  CHECK(epoll.valid());
  LinkTable t;
  t.install(0, link_to(7001, 0, epoll.get()), /*joined=*/false);
  t.install(1, link_to(7002, 1, epoll.get()), /*joined=*/true);
  CHECK_EQ(t.size(), 2u);
  CHECK_EQ(t.of_endpoint(endpoint(7002)), 1);
  CHECK_EQ(t.of_endpoint(endpoint(7003)), -1);
  CHECK(!t.memory(0).joined);
  CHECK(t.memory(1).joined);
  CHECK(!t.all_up());  // nothing connected

  // What the engine remembered of index 0, and its snapshot's last error, go with its link.
  t.memory(0).seen_up = true;
  t.memory(0).logged = "refused";
  t.set_last_error(0, "refused");
  CHECK(t.snapshot()[0].last_error == "refused");
  t.install(0, link_to(7003, 0, epoll.get()), /*joined=*/true);
  CHECK_EQ(t.size(), 2u);
  CHECK_EQ(t.of_endpoint(endpoint(7001)), -1);
  CHECK_EQ(t.of_endpoint(endpoint(7003)), 0);
  CHECK(!t.memory(0).seen_up);
  CHECK(t.memory(0).logged.empty());
  CHECK(t.memory(0).joined);
  const std::vector<pd3::ServerState> s = t.snapshot();
  CHECK_EQ(s.size(), 2u);
  CHECK_EQ(s[0].endpoint.port, 7003);
  CHECK(s[0].last_error.empty());
  CHECK(!s[0].connected);
  CHECK_EQ(s[0].server_id, -1);
  CHECK_EQ(s[1].endpoint.port, 7002);

  size_t iterated = 0;
  for (const auto& e : t) iterated += e.link->up() ? 0 : 1;
  CHECK_EQ(iterated, 2u);
}

TEST(link_table_refresh_copies_the_link_and_placeability) {
  pd3::UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  LinkTable t;
  t.install(0, link_to(7001, 0, epoll.get()), false);
  t[0].free_bytes() = 12345;
  CHECK_EQ(t.snapshot()[0].free_bytes, 0u);  // only a refresh copies it
  t.refresh(0, /*placeable=*/false);
  CHECK_EQ(t.snapshot()[0].free_bytes, 12345u);
  CHECK(!t.snapshot()[0].placeable);
  t.refresh(0, true);
  CHECK(t.snapshot()[0].placeable);
}

TEST(link_table_server_ids_unknown_until_bound) {
  pd3::UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  LinkTable t;
  t.install(0, link_to(7001, 0, epoll.get()), false);
  // A link that never said hello has no server id: nothing maps to it, and forgetting is a no-op.
  CHECK_EQ(t.of_server(0), -1);
  t.forget_server(0);
  CHECK_EQ(t.of_server(0), -1);
  t.forget_all_servers();
  CHECK_EQ(t.of_server(0), -1);
}

}  // namespace
