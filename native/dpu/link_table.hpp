// link_table.hpp — the Transfer Engine's memory-server links by index, with what the engine
// remembers of each (connected once? which failure was logged? joined at run time?), which link
// serves each server id, and the snapshot of their states that other threads read. Engine thread
// only, except snapshot(), which any thread may call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/net.hpp"
#include "dpu/server_link.hpp"
#include "dpu/transfer_engine.hpp"

namespace pd3 {

// The engine's links: index → link and its memory, server id → index, and the ServerState snapshot.
class LinkTable {
 public:
  // What the engine keeps of a link besides the link itself.
  struct Memory {
    bool seen_up = false;  // it connected at least once (a later connection is a reconnect)
    std::string logged;    // the connect failure last logged ("" = none), so a server that stays
                           // down is logged once per reason
    bool joined = false;   // added at run time, for a server that joined the pool
  };

  // One index: the link and what the engine remembers of it.
  struct Entry {
    std::unique_ptr<ServerLink> link;
    Memory memory;
  };

  size_t size() const { return entries_.size(); }
  // The link at index li (li < size()). Const like a vector of unique_ptr: the table's shape is
  // fixed, the link itself is not.
  ServerLink& operator[](size_t li) const { return *entries_[li].link; }
  Memory& memory(size_t li) { return entries_[li].memory; }
  // Range-for over the entries: `for (const auto& e : table) e.link->up()`.
  auto begin() const { return entries_.cbegin(); }
  auto end() const { return entries_.cend(); }

  // Puts `link` at index li, which is size() (appended) or an existing index (the link there is
  // replaced: the caller closed it and forgot its server id first). Resets what was remembered of
  // the index and its snapshot entry to `link`'s endpoint, not connected.
  void install(size_t li, std::unique_ptr<ServerLink> link, bool joined);

  // The index of the link to `endpoint`, or -1.
  int of_endpoint(const Endpoint& endpoint) const;
  // The index of the link serving server id `server_id`, or -1.
  int of_server(uint32_t server_id) const;
  // Link li serves its (connected) server's id from now on.
  void bind_server(int li);
  // Link li no longer serves its server id (closed, or taken over).
  void forget_server(int li);
  void forget_all_servers() { by_server_.clear(); }
  // Whether every link is connected.
  bool all_up() const;

  // Copies link li's state into the snapshot, with `placeable` (new regions may go there).
  void refresh(int li, bool placeable);
  // Records why link li's last connect or connection failed, for the snapshot.
  void set_last_error(int li, const std::string& why);
  // Every link's state as of its last refresh (any thread).
  std::vector<ServerState> snapshot() const;

 private:
  std::vector<Entry> entries_;
  std::unordered_map<uint32_t, int> by_server_; // server id → index of the link serving it
  mutable std::mutex snapshot_mu_;              // guards snapshot_
  std::vector<ServerState> snapshot_;           // by index, copied out whole under the lock
};

}  // namespace pd3
