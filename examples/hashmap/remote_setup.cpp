// remote_setup.cpp — agent wait, region allocation, bulk load through the owner handle.
#include "remote_setup.hpp"

#include <time.h>
#include <unistd.h>

namespace pd3::hashmap {

namespace {

// Bytes of one load write: a run of occupied slots (each run is one flush the agent parses).
constexpr uint32_t kLoadWriteBytes = 64u << 10;
// Load requests in flight at once.
constexpr uint32_t kLoadWindow = 1024;

uint64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

std::string describe(const char* what, int rc) {
  return std::string(what) + ": " + pd3_status_name(rc) + " (" + pd3_last_error() + ")";
}

// Issues through the owner handle, draining completions while back-pressured or at the window.
// Counts failures into *failed (the first one's status in *first_error).
class LoadPipe {
 public:
  explicit LoadPipe(pd3_host* host) : host_(host) {}

  int write(uint32_t region, uint32_t offset, const uint8_t* bytes, uint32_t size) {
    return issue([&] { return pd3_host_write(host_, region, offset, bytes, size, 0); });
  }
  int read(uint32_t region, uint32_t offset, uint8_t* dest, uint32_t size) {
    return issue([&] { return pd3_host_read(host_, region, offset, size, dest, 0); });
  }
  // Waits for everything issued. PD3_OK or the first failure.
  int drain() {
    while (pd3_host_inflight(host_) > 0) {
      if (const int rc = collect(); rc < 0) return rc;
      pd3_host_wait(host_, 1000);
    }
    return first_error_;
  }

 private:
  template <typename F>
  int issue(F&& once) {
    while (pd3_host_inflight(host_) >= kLoadWindow) {
      if (const int rc = collect(); rc < 0) return rc;
      pd3_host_wait(host_, 1000);
    }
    for (;;) {
      const int rc = once();
      if (rc >= 0) return PD3_OK;
      if (rc != PD3_E_AGAIN && rc != PD3_E_INFLIGHT) return rc;
      if (const int c = collect(); c < 0) return c;
      pd3_host_wait(host_, 200);
    }
  }

  int collect() {
    pd3_completion done[256];
    const int n = pd3_host_poll(host_, done, 256);
    for (int i = 0; i < n; ++i) {
      if (done[i].status != PD3_OK && first_error_ == PD3_OK) first_error_ = done[i].status;
    }
    return n < 0 ? n : PD3_OK;
  }

  pd3_host* host_;
  int first_error_ = PD3_OK;
};

}  // namespace

int wait_for_agent(pd3_host* host, uint32_t timeout_ms) {
  const uint64_t deadline = now_ms() + timeout_ms;
  while (!pd3_host_agent_alive(host)) {
    if (now_ms() >= deadline) return PD3_E_AGENT_DOWN;
    usleep(2000);
  }
  return PD3_OK;
}

int allocate_regions(pd3_host* host, uint32_t count, uint32_t bytes, uint32_t timeout_ms,
                     std::vector<uint32_t>* regions) {
  const uint64_t deadline = now_ms() + timeout_ms;
  while (regions->size() < count) {
    int rc = pd3_host_allocate(host, bytes, 0);
    pd3_completion c{};
    if (rc >= 0) {
      while ((rc = pd3_host_poll(host, &c, 1)) == 0) pd3_host_wait(host, 1000);
      if (rc > 0) rc = c.status;
    }
    if (rc == PD3_OK) {
      regions->push_back(c.region);
      continue;
    }
    if (rc != PD3_E_UNAVAILABLE || now_ms() >= deadline) return rc;
    usleep(20000);  // the agent is still connecting to the memory servers
  }
  return PD3_OK;
}

int release_regions(pd3_host* host, const std::vector<uint32_t>& regions, uint32_t timeout_ms) {
  int first_error = PD3_OK;
  for (const uint32_t r : regions) {
    const int rc = pd3_host_deallocate(host, r, 0);
    if (rc < 0 && first_error == PD3_OK) first_error = rc;
  }
  const uint64_t deadline = now_ms() + timeout_ms;
  while (pd3_host_inflight(host) > 0 && now_ms() < deadline) {
    pd3_completion done[64];
    const int n = pd3_host_poll(host, done, 64);
    if (n < 0) return n;
    for (int i = 0; i < n; ++i) {
      if (done[i].status != PD3_OK && first_error == PD3_OK) first_error = done[i].status;
    }
    if (n == 0) pd3_host_wait(host, 1000);
  }
  if (pd3_host_inflight(host) > 0 && first_error == PD3_OK) first_error = PD3_E_TIMEOUT;
  return first_error;
}

int local_load(HashTable& table, uint64_t records, std::string* why) {
  for (uint64_t key = 0; key < records; ++key) {
    if (!table.preload({key, load_value(key), 0, false, false, false})) {
      *why = "the cache refused a record in the local mode";
      return PD3_E_NOSPACE;
    }
  }
  return PD3_OK;
}

int bulk_load(pd3_host* host, HashTable& table, uint64_t records, std::string* why) {
  const SlotLayout& layout = *table.layout();
  // occupant[slot] = key + 1, 0 = unused (loaded keys are below 2^64 - 1).
  std::vector<uint64_t> occupant(layout.slots(), 0);
  for (uint64_t key = 0; key < records; ++key) {
    uint64_t slot;
    if (!table.place(key, &slot)) {
      *why = "the table is full: --slots must exceed --records";
      return PD3_E_NOSPACE;
    }
    occupant[slot] = key + 1;
  }
  LoadPipe pipe(host);
  std::vector<uint8_t> run(kLoadWriteBytes);
  for (uint64_t s = 0; s < layout.slots();) {
    if (occupant[s] == 0) {
      ++s;
      continue;
    }
    // A run of occupied slots within one region, at most one write long.
    const uint32_t limit = layout.contiguous(s, kLoadWriteBytes / kSlotBytes);
    uint32_t n = 0;
    while (n < limit && occupant[s + n] != 0) {
      const uint64_t key = occupant[s + n] - 1;
      encode_live(run.data() + size_t(n) * kSlotBytes, key, load_value(key));
      ++n;
    }
    const SlotAddress a = layout.address(s);
    if (const int rc = pipe.write(a.region, a.offset, run.data(), n * kSlotBytes); rc != PD3_OK) {
      *why = describe("load write", rc);
      return rc;
    }
    s += n;
  }
  if (const int rc = pipe.drain(); rc != PD3_OK) {
    *why = describe("load write", rc);
    return rc;
  }
  // Keep an evenly spread subset locally, then read it back: checks the load, and in the pd3
  // modes the agent learns from the read responses that the host holds these keys (Host View).
  const uint64_t capacity = table.cache().capacity();
  const uint64_t stride = capacity >= records ? 1 : (records + capacity - 1) / capacity;
  std::vector<std::pair<uint64_t, uint64_t>> kept;  // (key, slot)
  for (uint64_t s = 0; s < layout.slots(); ++s) {
    const uint64_t key = occupant[s] - 1;
    if (occupant[s] == 0 || key % stride != 0) continue;
    if (table.preload({key, load_value(key), s, false, false, false})) kept.push_back({key, s});
  }
  std::vector<uint8_t> back(kept.size() * kSlotBytes);
  for (size_t i = 0; i < kept.size(); ++i) {
    const SlotAddress a = layout.address(kept[i].second);
    if (const int rc = pipe.read(a.region, a.offset, back.data() + i * kSlotBytes, kSlotBytes); rc != PD3_OK) {
      *why = describe("load read-back", rc);
      return rc;
    }
  }
  if (const int rc = pipe.drain(); rc != PD3_OK) {
    *why = describe("load read-back", rc);
    return rc;
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const SlotRecord r = decode_slot(back.data() + i * kSlotBytes);
    if (r.kind != SlotKind::kLive || r.key != kept[i].first || r.value != load_value(kept[i].first)) {
      *why = "load read-back: slot " + std::to_string(kept[i].second) + " does not hold key " +
             std::to_string(kept[i].first);
      return PD3_E_CORRUPT;
    }
  }
  return PD3_OK;
}

}  // namespace pd3::hashmap
