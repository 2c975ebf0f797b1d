// link_table.cpp — see link_table.hpp.
#include "dpu/link_table.hpp"

#include <algorithm>
#include <cassert>

namespace pd3 {

void LinkTable::install(size_t li, std::unique_ptr<ServerLink> link, bool joined) {
  assert(li <= entries_.size());
  ServerState state;
  state.endpoint = link->endpoint();
  if (li == entries_.size()) entries_.emplace_back();
  entries_[li] = Entry{std::move(link), Memory{false, std::string(), joined}};
  std::lock_guard lock(snapshot_mu_);
  if (li == snapshot_.size()) snapshot_.emplace_back();
  snapshot_[li] = std::move(state);
}

int LinkTable::of_endpoint(const Endpoint& endpoint) const {
  for (size_t li = 0; li < entries_.size(); ++li) {
    if (entries_[li].link->endpoint() == endpoint) return int(li);
  }
  return -1;
}

int LinkTable::of_server(uint32_t server_id) const {
  const auto it = by_server_.find(server_id);
  return it == by_server_.end() ? -1 : it->second;
}

void LinkTable::bind_server(int li) {
  assert((*this)[li].server_id() >= 0);
  by_server_[uint32_t((*this)[li].server_id())] = li;
}

void LinkTable::forget_server(int li) {
  const int id = (*this)[li].server_id();
  if (id >= 0 && of_server(uint32_t(id)) == li) by_server_.erase(uint32_t(id));
}

bool LinkTable::all_up() const {
  return std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.link->up(); });
}

void LinkTable::refresh(int li, bool placeable) {
  const ServerLink& link = (*this)[li];
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
