// engine_links.cpp — the Transfer Engine's memory-server links and the pool's membership (Engine,
// engine.hpp): changes set_member queued, links added for servers that joined, links lost (their
// requests failed) and links that came up (a server id bound, the connection logged).
#include <string>

#include "dpu/engine.hpp"

namespace pd3 {

namespace {

// Links at most, those of servers that joined the pool at run time included: placement tracks the
// servers an allocation tried in a 64-bit mask of link indexes.
constexpr size_t kMaxLinks = kMaxPlacementServers;

}  // namespace

void Engine::apply_members() {
  for (const MemberInbox::Command& c : members_.take()) {
    const int li = links_.of_endpoint(c.endpoint);
    if (li >= 0) {
      // Known: placeable or not from now on. Its connection is left alone either way: a server
      // that left may still hold regions, which are served while it answers.
      placement_.set_live(size_t(li), c.member);
      refresh_server(li);
    } else if (c.member) {
      add_link(c.endpoint);  // connected by service_timers, placed once its hello succeeds
    }
  }
}

void Engine::add_link(const Endpoint& endpoint) {
  size_t li = links_.size();
  if (li >= kMaxLinks) {
    // No room for another link: take the place of a server that left the pool and is not up (a
    // link that is not up holds no request). Its regions were unreachable anyway.
    for (li = 0; li < links_.size(); ++li)
      if (!placement_.live(li) && !links_[li].up()) break;
    if (li == links_.size()) {
      log_.log(LogLevel::kError, "pool.member_refused",
               "%s joined the pool, but this agent serves %zu memory servers at most and none of them left",
               endpoint.str().c_str(), kMaxLinks);
      return;
    }
    ServerLink& old = links_[li];
    log_.log(LogLevel::kInfo, "pool.link_reused", "%s takes the link of %s (server %d), which left the pool",
             endpoint.str().c_str(), old.endpoint().str().c_str(), old.server_id());
    orphans_.clear();
    old.close(now_ns(), *buffer_, &orphans_);  // a connect or hello under way: its socket leaves epoll
    fail_records(orphans_, PD3_E_UNAVAILABLE);  // none: records go only to links that are up
    links_.forget_server(int(li));
  }
  links_.install(li, std::make_unique<ServerLink>(endpoint, uint32_t(li), epoll_.get(), link_options_), /*joined=*/true);
  placement_.reset(li);
}

void Engine::fail_link(int li, int status, const std::string& why, uint64_t now) {
  ServerLink& link = links_[li];
  const bool was_up = link.up();
  orphans_.clear();
  link.close(now, *buffer_, &orphans_);
  // The timeout case tells the host its server stopped answering; anything else, that it is gone.
  const size_t failed = fail_records(orphans_, status == PD3_E_TIMEOUT && was_up ? PD3_E_TIMEOUT : PD3_E_UNAVAILABLE);
  links_.forget_server(li);
  if (prefetch_ && link.server_id() >= 0) prefetch_->prefetcher().on_server_lost(li);
  if (was_up) {
    log_.log(LogLevel::kWarn, "server.lost", "%s (server %d) dropped: %s; %zu requests failed",
             link.endpoint().str().c_str(), link.server_id(), why.c_str(), failed);
  } else if (why != links_.memory(li).logged) {  // a server that stays down is logged once per reason
    const bool refused = status == PD3_E_AUTH || status == PD3_E_BAD_VERSION || status == PD3_E_PROTOCOL;
    log_.log(refused ? LogLevel::kError : LogLevel::kWarn, status == PD3_E_AUTH ? "server.auth" : "server.unreachable",
             "%s: %s (retrying every %u ms)", link.endpoint().str().c_str(), why.c_str(), options_.reconnect_ms);
  }
  links_.memory(li).logged = why;
  links_.set_last_error(li, why);
  refresh_server(li);
}

void Engine::on_link_up(int li) {
  ServerLink& link = links_[li];
  LinkTable::Memory& memory = links_.memory(li);
  const int id = link.server_id();
  if (const int holder = links_.of_server(uint32_t(id)); holder >= 0 && holder != li) {
    const std::string why = "server id " + std::to_string(id) + " is already served by " +
                            links_[holder].endpoint().str();
    log_.log(LogLevel::kError, "server.duplicate_id", "%s: %s", link.endpoint().str().c_str(), why.c_str());
    memory.logged = why;  // fail_link below must not log it a second time
    fail_link(li, PD3_E_PROTOCOL, why, now_ns());
    return;
  }
  links_.bind_server(li);
  if (memory.seen_up) {
    bump(counters_.reconnects);
    log_.log(LogLevel::kInfo, "server.reconnected", "%s (server %d) is back", link.endpoint().str().c_str(), id);
  } else if (memory.joined) {
    log_.log(LogLevel::kInfo, "pool.member_joined", "%s (server %d) joined the pool: %llu of %llu bytes free; new regions may go there",
             link.endpoint().str().c_str(), id, (unsigned long long)link.free_bytes(),
             (unsigned long long)link.capacity());
  } else {
    log_.log(LogLevel::kInfo, "server.connected", "%s (server %d): %llu of %llu bytes free",
             link.endpoint().str().c_str(), id, (unsigned long long)link.free_bytes(),
             (unsigned long long)link.capacity());
  }
  memory.seen_up = true;
  memory.logged.clear();
  refresh_server(li);
}

}  // namespace pd3
