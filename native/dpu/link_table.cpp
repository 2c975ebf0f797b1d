// link_table.cpp — see link_table.hpp.
#include "dpu/link_table.hpp"

#include <algorithm>
#include <cassert>

namespace pd3 {

void LinkTable::install(size_t li, std::unique_ptr<ServerLink> link, bool joined) {
  assert(li <= links_.size());
  ServerState state;
  state.endpoint = link->endpoint();
  if (li == links_.size()) {
    links_.push_back(std::move(link));
    memory_.emplace_back();
  } else {
    links_[li] = std::move(link);
  }
  memory_[li] = Memory{false, std::string(), joined};
  std::lock_guard lock(snapshot_mu_);
  if (li == snapshot_.size()) snapshot_.emplace_back();
  snapshot_[li] = std::move(state);
}

int LinkTable::of_endpoint(const Endpoint& endpoint) const {
  for (size_t li = 0; li < links_.size(); ++li) {
    const Endpoint& e = links_[li]->endpoint();
    if (e.port == endpoint.port && e.host == endpoint.host) return int(li);
  }
  return -1;
}

int LinkTable::of_server(uint32_t server_id) const {
  const auto it = by_server_.find(server_id);
  return it == by_server_.end() ? -1 : it->second;
}

void LinkTable::bind_server(int li) {
  assert(links_[li]->server_id() >= 0);
  by_server_[uint32_t(links_[li]->server_id())] = li;
}

void LinkTable::forget_server(int li) {
  const int id = links_[li]->server_id();
  if (id >= 0 && of_server(uint32_t(id)) == li) by_server_.erase(uint32_t(id));
}

bool LinkTable::all_up() const {
  return std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->up(); });
}

void LinkTable::refresh(int li, bool placeable) {
  const ServerLink& link = *links_[li];
  std::lock_guard lock(snapshot_mu_);
  ServerState& s = snapshot_[li];
  s.connected = link.up();
  s.server_id = link.server_id();
  s.capacity = link.capacity();
  s.free_bytes = link.free_bytes();
  s.placeable = placeable;
}

void LinkTable::set_last_error(int li, const std::string& why) {
  std::lock_guard lock(snapshot_mu_);
  snapshot_[li].last_error = why;
}

std::vector<ServerState> LinkTable::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

}  // namespace pd3
