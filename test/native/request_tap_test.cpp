// request_tap_test.cpp — the request tap: RESP and binary streams in random pieces give exactly
// their accesses; gaps, unsynced flows, protocol garbage and pending overflows never give a guessed
// key and recover at a later request; interleaved flows, bounds, a full queue, broken parsers,
// random bytes (byte accounting); and end to end behind the real TeeProxy and PacketMirror.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/net.hpp"
#include "common/unique_fd.hpp"
#include "dpu/access_queue.hpp"
#include "dpu/packet_mirror.hpp"
#include "dpu/request_tap.hpp"
#include "dpu/tee_proxy.hpp"
#include "harness.hpp"
#include "loopback_apps.hpp"
#include "parsers/plugin_loader.hpp"
#include "parsers/resp_parser.hpp"
#include "pd3/binproto.h"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3test::Rng;

// One access as the test expects or receives it.
struct Access {
  uint32_t op;
  std::string key;
  bool operator==(const Access&) const = default;
};

// One request of a generated stream: its byte range and the accesses a parser must report.
struct Request {
  size_t begin, end;
  std::vector<Access> accesses;
};

// A generated client byte stream and what it holds.
struct Stream {
  std::vector<uint8_t> bytes;
  std::vector<Request> requests;

  // Accesses of the requests whose bytes satisfy `keep(begin, end)`, in order.
  template <class Keep>
  std::vector<Access> accesses_where(Keep&& keep) const {
    std::vector<Access> out;
    for (const Request& r : requests)
      if (keep(r.begin, r.end)) out.insert(out.end(), r.accesses.begin(), r.accesses.end());
    return out;
  }
  std::vector<Access> all() const {
    return accesses_where([](size_t, size_t) { return true; });
  }
};

std::string alnum(Rng& rng, size_t n) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string s(n, 'x');
  for (char& c : s) c = kChars[rng.below(sizeof kChars - 1)];
  return s;
}

// A key no other request of the test is likely to share: `prefix` names the flow.
std::string random_key(Rng& rng, const std::string& prefix) { return prefix + alnum(rng, 1 + rng.below(30)); }

// Appends one RESP array request.
void add_resp(Stream& s, const std::vector<std::string>& args, std::vector<Access> accesses) {
  const size_t begin = s.bytes.size();
  auto put = [&](const std::string& t) { s.bytes.insert(s.bytes.end(), t.begin(), t.end()); };
  put("*" + std::to_string(args.size()) + "\r\n");
  for (const std::string& a : args) put("$" + std::to_string(a.size()) + "\r\n" + a + "\r\n");
  s.requests.push_back({begin, s.bytes.size(), std::move(accesses)});
}

// Appends one random GET/SET/MGET/DEL/INCR/PING request. Keys and values are alphanumeric, so
// '*' and "\r\n" only ever appear in RESP framing.
void add_random_resp(Stream& s, Rng& rng, const std::string& prefix, size_t max_value = 200) {
  const std::string k = random_key(rng, prefix);
  switch (rng.below(6)) {
    case 0: add_resp(s, {"GET", k}, {{PD3_ACCESS_READ, k}}); break;
    case 1: add_resp(s, {"SET", k, alnum(rng, rng.below(uint32_t(max_value)))}, {{PD3_ACCESS_WRITE, k}}); break;
    case 2: {
      std::vector<std::string> args{"MGET"};
      std::vector<Access> acc;
      for (uint32_t i = 0, n = 1 + rng.below(10); i < n; ++i) {
        args.push_back(random_key(rng, prefix));
        acc.push_back({PD3_ACCESS_READ, args.back()});
      }
      add_resp(s, args, acc);
      break;
    }
    case 3: {
      std::vector<std::string> args{"DEL"};
      std::vector<Access> acc;
      for (uint32_t i = 0, n = 1 + rng.below(5); i < n; ++i) {
        args.push_back(random_key(rng, prefix));
        acc.push_back({PD3_ACCESS_DELETE, args.back()});
      }
      add_resp(s, args, acc);
      break;
    }
    case 4: add_resp(s, {"INCR", k}, {{PD3_ACCESS_READ, k}}); break;
    default: add_resp(s, {"PING"}, {}); break;
  }
}

Stream resp_stream(Rng& rng, size_t requests, const std::string& prefix = "k") {
  Stream s;
  for (size_t i = 0; i < requests; ++i) add_random_resp(s, rng, prefix);
  return s;
}

// Appends one pd3/binproto.h request; false (nothing appended) if a byte other than the magic
// would be 0xD3, so a test's expectations about resync stay exact.
bool add_binary(Stream& s, uint8_t op, const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  std::vector<uint8_t> body;
  auto le = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) body.push_back(uint8_t(v >> (8 * i)));
  };
  std::vector<Access> acc;
  const uint32_t kind = op == PD3_BIN_GET ? PD3_ACCESS_READ : op == PD3_BIN_PUT ? PD3_ACCESS_WRITE : PD3_ACCESS_DELETE;
  for (size_t i = 0; i < keys.size(); ++i) {
    le(keys[i].size(), 2);
    body.insert(body.end(), keys[i].begin(), keys[i].end());
    if (op == PD3_BIN_PUT) {
      le(values[i].size(), 4);
      body.insert(body.end(), values[i].begin(), values[i].end());
    }
    acc.push_back({kind, keys[i]});
  }
  std::vector<uint8_t> req;
  const uint32_t length = uint32_t(4 + body.size());
  for (int i = 0; i < 4; ++i) req.push_back(uint8_t(length >> (8 * i)));
  req.push_back(PD3_BIN_MAGIC);
  req.push_back(op);
  req.push_back(uint8_t(keys.size()));
  req.push_back(uint8_t(keys.size() >> 8));
  req.insert(req.end(), body.begin(), body.end());
  for (size_t i = 0; i < req.size(); ++i)
    if (i != 4 && req[i] == PD3_BIN_MAGIC) return false;
  const size_t begin = s.bytes.size();
  s.bytes.insert(s.bytes.end(), req.begin(), req.end());
  s.requests.push_back({begin, s.bytes.size(), std::move(acc)});
  return true;
}

Stream binary_stream(Rng& rng, size_t requests) {
  Stream s;
  while (s.requests.size() < requests) {
    const uint8_t op = uint8_t(1 + rng.below(3));
    std::vector<std::string> keys, values;
    for (uint32_t i = 0, n = 1 + rng.below(6); i < n; ++i) {
      keys.push_back(random_key(rng, "b"));
      values.push_back(alnum(rng, rng.below(300)));
    }
    add_binary(s, op, keys, values);
  }
  return s;
}

pd3::ParserHandle parser(const char* name) {
  pd3::ParserHandle h;
  if (pd3::load_parser(name, &h) != PD3_OK) std::fprintf(stderr, "  load_parser(%s): %s\n", name, pd3_last_error());
  return h;
}

// Checks the tap's byte accounting: every delivered byte is parsed, skipped, refused or pending.
void check_accounting(const pd3::RequestTapStats& s) {
  CHECK_EQ(s.bytes_delivered, s.bytes_parsed + s.bytes_skipped + s.bytes_refused + s.pending_bytes);
}

// A tap driven by hand through its callbacks, with the queue drained after every delivery.
struct TapRig {
  pd3::AccessQueue queue;
  std::unique_ptr<pd3::RequestTap> tap;
  pd3::FlowCallbacks cb;
  std::vector<Access> got;

  explicit TapRig(const char* parser_name, pd3::RequestTapOptions o = {}, size_t queue_bytes = 4u << 20)
      : TapRig(parser(parser_name), o, queue_bytes) {}
  TapRig(pd3::ParserHandle p, pd3::RequestTapOptions o, size_t queue_bytes = 4u << 20) : queue(queue_bytes) {
    const int rc = pd3::RequestTap::create(o, std::move(p), &queue, &tap);
    if (rc != PD3_OK) std::fprintf(stderr, "  RequestTap::create: %s\n", pd3_last_error());
    REQUIRE(rc == PD3_OK);  // aborts the case (the harness catches it)
    cb = tap->callbacks();
  }
  void open(uint64_t id, bool synced) { cb.open(id, pd3::FlowKey{}, synced); }
  void deliver(uint64_t id, const uint8_t* p, size_t n, bool gap = false) {
    cb.deliver(id, p, n, gap);
    drain();
  }
  void close(uint64_t id) { cb.close(id, pd3::FlowEnd::kFin); }
  void drain() {
    queue.drain(SIZE_MAX, [&](const pd3::AccessRecord& r) {
      got.push_back({r.op, std::string(reinterpret_cast<const char*>(r.key), r.key_len)});
    });
  }
  // Delivers bytes [begin, end) of `s` in random pieces (tiny ones too); the first piece carries
  // `first_gap`.
  void deliver_chunked(uint64_t id, const Stream& s, size_t begin, size_t end, Rng& rng, bool first_gap = false) {
    bool gap = first_gap;
    for (size_t at = begin; at < end;) {
      const size_t max_piece = rng.below(4) == 0 ? 8 : 3000;
      const size_t n = std::min<size_t>(end - at, 1 + rng.below(uint32_t(max_piece)));
      deliver(id, s.bytes.data() + at, n, gap);
      gap = false;
      at += n;
    }
  }
};

}  // namespace

TEST(request_tap_rejects_bad_options) {
  pd3::AccessQueue queue(4096);
  std::unique_ptr<pd3::RequestTap> tap;
  const pd3::ParserHandle resp = parser("resp");
  CHECK_EQ(pd3::RequestTap::create({}, pd3::ParserHandle(), &queue, &tap), PD3_E_INVAL);
  CHECK_EQ(pd3::RequestTap::create({}, resp, nullptr, &tap), PD3_E_INVAL);
  pd3::RequestTapOptions o;
  o.max_flows = 0;
  CHECK_EQ(pd3::RequestTap::create(o, resp, &queue, &tap), PD3_E_INVAL);
  o = {};
  o.max_flows = (1u << 24) + 1;
  CHECK_EQ(pd3::RequestTap::create(o, resp, &queue, &tap), PD3_E_INVAL);
  o = {};
  o.max_pending_bytes = 0;
  CHECK_EQ(pd3::RequestTap::create(o, resp, &queue, &tap), PD3_E_INVAL);
  o = {};
  o.max_pending_bytes = (1ull << 30) + 1;
  o.max_pending_total = 1ull << 32;
  CHECK_EQ(pd3::RequestTap::create(o, resp, &queue, &tap), PD3_E_INVAL);
  o = {};
  o.max_pending_total = o.max_pending_bytes - 1;
  CHECK_EQ(pd3::RequestTap::create(o, resp, &queue, &tap), PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "max_pending_total") != nullptr);
  CHECK(tap == nullptr);
  CHECK_EQ(pd3::RequestTap::create({}, resp, &queue, &tap), PD3_OK);
  CHECK(tap != nullptr);
}

TEST(request_tap_resp_pipelines_in_random_pieces_are_exact) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    const Stream s = resp_stream(rng, 300);
    TapRig rig("resp");
    rig.open(7, true);
    rig.deliver_chunked(7, s, 0, s.bytes.size(), rng);
    CHECK(rig.got == s.all());
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.bytes_parsed, uint64_t(s.bytes.size()));
    CHECK_EQ(st.pending_bytes, 0u);
    CHECK_EQ(st.parse_errors + st.resyncs + st.desyncs + st.gaps + st.queue_full, 0u);
    uint64_t reads = 0, writes = 0, deletes = 0;
    for (const Access& a : s.all()) (a.op == PD3_ACCESS_READ ? reads : a.op == PD3_ACCESS_WRITE ? writes : deletes)++;
    CHECK_EQ(st.accesses_read, reads);
    CHECK_EQ(st.accesses_write, writes);
    CHECK_EQ(st.accesses_delete, deletes);
    check_accounting(st);
  }
  // The whole pipeline in one delivery: parsed straight from it, nothing held.
  Rng rng(99);
  const Stream s = resp_stream(rng, 2000);
  TapRig rig("resp");
  rig.open(1, true);
  rig.deliver(1, s.bytes.data(), s.bytes.size());
  CHECK(rig.got == s.all());
  CHECK_EQ(rig.tap->stats().pending_bytes, 0u);
}

TEST(request_tap_gap_never_guesses_a_key_and_recovers) {
  int recovered = 0;
  for (uint64_t trial = 0; trial < 200; ++trial) {
    Rng rng(1000 + trial);
    const Stream s = resp_stream(rng, 60);
    const size_t a = rng.below(uint32_t(s.bytes.size()));
    const size_t b = a + 1 + rng.below(uint32_t(std::min<size_t>(s.bytes.size() - a, 2000)));
    TapRig rig("resp");
    rig.open(3, true);
    rig.deliver_chunked(3, s, 0, a, rng);
    rig.deliver_chunked(3, s, b, s.bytes.size(), rng, /*first_gap=*/true);
    // Requests wholly before the gap, then every request that starts at or after its end: nothing
    // cut by the gap, nothing invented.
    const std::vector<Access> want =
        s.accesses_where([&](size_t begin, size_t end) { return end <= a || begin >= b; });
    CHECK(rig.got == want);
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.gaps, b < s.bytes.size() ? 1u : 0u);
    recovered += s.accesses_where([&](size_t begin, size_t) { return begin >= b; }).size() > 0;
    check_accounting(st);
    rig.close(3);
    check_accounting(rig.tap->stats());
    CHECK_EQ(rig.tap->stats().pending_bytes, 0u);
  }
  CHECK(recovered > 150);
}

TEST(request_tap_unsynced_flows_start_at_a_later_request) {
  for (uint64_t trial = 0; trial < 150; ++trial) {
    Rng rng(5000 + trial);
    const Stream s = resp_stream(rng, 40);
    const size_t b = rng.below(uint32_t(s.bytes.size()));
    const std::vector<Access> want = s.accesses_where([&](size_t begin, size_t) { return begin >= b; });
    // Opened unsynced, with and without after_gap on the first delivery; and never opened at all.
    for (int how = 0; how < 3; ++how) {
      TapRig rig("resp");
      if (how < 2) rig.open(9, false);
      rig.deliver_chunked(9, s, b, s.bytes.size(), rng, /*first_gap=*/how == 0);
      CHECK(rig.got == want);
      const pd3::RequestTapStats st = rig.tap->stats();
      CHECK_EQ(st.flows_unsynced, 1u);
      CHECK_EQ(st.flows_total, 1u);
      CHECK_EQ(st.desyncs, 1u);
      check_accounting(st);
    }
  }
}

TEST(request_tap_protocol_garbage_is_counted_and_later_requests_parsed) {
  const std::vector<std::string> garbage = {
      "*2\r\n:1\r\n:2\r\n",                                    // an element that is not a bulk string
      "*abc\r\n",                                              // a bad count
      "*1\r\n$-7\r\n",                                         // a negative length
      "SET \"unbalanced\r\n",                                  // an inline command with a lone quote
      "*3\r\n$3\r\nSET\r\n$5\r\ngkey1\r\n$1\r\nvXX\r\n",       // a bulk string not ended by \r\n:
                                                               // its key must not come out
  };
  for (size_t g = 0; g < garbage.size(); ++g) {
    for (uint64_t trial = 0; trial < 20; ++trial) {
      Rng rng(7000 + g * 100 + trial);
      // Twice: after the first error the flow is back in sync once a request was accepted, so the
      // second one is a protocol error again, not a rejected resync candidate.
      Stream s = resp_stream(rng, 20);
      for (int twice = 0; twice < 2; ++twice) {
        s.bytes.insert(s.bytes.end(), garbage[g].begin(), garbage[g].end());
        for (int i = 0; i < 20; ++i) add_random_resp(s, rng, "k");
      }
      TapRig rig("resp");
      rig.open(1, true);
      rig.deliver_chunked(1, s, 0, s.bytes.size(), rng);
      CHECK(rig.got == s.all());
      const pd3::RequestTapStats st = rig.tap->stats();
      CHECK_EQ(st.parse_errors, 2u);
      CHECK_EQ(st.desyncs, 2u);
      CHECK(st.resyncs >= 2);
      CHECK_EQ(st.bytes_skipped, 2 * garbage[g].size());  // resync lands on the next real request
      check_accounting(st);
    }
  }
}

TEST(request_tap_interleaved_flows_each_exact) {
  constexpr int kFlows = 20;
  Rng rng(42);
  std::vector<Stream> streams;
  // Each flow's pieces, in order; then merged in a random order that keeps each flow's order.
  std::vector<std::vector<std::pair<size_t, size_t>>> pieces(kFlows);
  for (int f = 0; f < kFlows; ++f) {
    streams.push_back(resp_stream(rng, 150, "f" + std::to_string(f) + "-"));
    for (size_t at = 0; at < streams[f].bytes.size();) {
      const size_t n = std::min<size_t>(streams[f].bytes.size() - at, 1 + rng.below(rng.below(3) ? 400 : 6));
      pieces[f].push_back({at, at + n});
      at += n;
    }
  }
  TapRig rig("resp");
  for (int f = 0; f < kFlows; ++f) rig.open(100 + f, true);
  CHECK_EQ(rig.tap->stats().flows_open, uint64_t(kFlows));
  std::vector<size_t> next(kFlows, 0);
  for (size_t left = kFlows; left > 0;) {
    const int f = int(rng.below(kFlows));
    if (next[f] == pieces[f].size()) continue;
    const auto [b, e] = pieces[f][next[f]++];
    rig.deliver(100 + f, streams[f].bytes.data() + b, e - b);
    if (next[f] == pieces[f].size()) {
      rig.close(100 + f);
      --left;
    }
  }
  std::map<std::string, std::vector<Access>> by_flow;
  for (const Access& a : rig.got) by_flow[a.key.substr(0, a.key.find('-'))].push_back(a);
  for (int f = 0; f < kFlows; ++f) CHECK(by_flow["f" + std::to_string(f)] == streams[f].all());
  const pd3::RequestTapStats st = rig.tap->stats();
  CHECK_EQ(st.flows_open, 0u);
  CHECK_EQ(st.flows_total, uint64_t(kFlows));
  CHECK_EQ(st.pending_bytes, 0u);
  CHECK_EQ(st.bytes_skipped, 0u);
  check_accounting(st);
}

TEST(request_tap_pending_overflow_drops_the_request_and_recovers) {
  // A SET whose value is beyond max_pending_bytes, arriving in pieces (the held copy overflows)
  // or with most of it in one delivery (the tail to keep overflows).
  for (int one_delivery = 0; one_delivery < 2; ++one_delivery) {
    Rng rng(11 + uint64_t(one_delivery));
    Stream s = resp_stream(rng, 10);
    const size_t big_begin = s.bytes.size();
    const std::string big_key = "big";
    add_resp(s, {"SET", big_key, alnum(rng, 10000)}, {{PD3_ACCESS_WRITE, big_key}});
    const size_t big_end = s.bytes.size();
    for (int i = 0; i < 10; ++i) add_random_resp(s, rng, "k");
    pd3::RequestTapOptions o;
    o.max_pending_bytes = 4096;
    TapRig rig("resp", o);
    rig.open(1, true);
    if (one_delivery) {
      rig.deliver(1, s.bytes.data(), big_begin + 8000);
      rig.deliver_chunked(1, s, big_begin + 8000, s.bytes.size(), rng);
    } else {
      rig.deliver_chunked(1, s, 0, big_begin + 5, rng);
      for (size_t at = big_begin + 5; at < s.bytes.size(); at += 1000)
        rig.deliver(1, s.bytes.data() + at, std::min<size_t>(1000, s.bytes.size() - at));
    }
    CHECK(rig.got == s.accesses_where([&](size_t b, size_t) { return b != big_begin; }));
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.pending_overflows, 1u);
    CHECK_EQ(st.desyncs, 1u);
    CHECK_EQ(st.bytes_skipped, uint64_t(big_end - big_begin));  // exactly the dropped request
    CHECK_EQ(st.pending_bytes, 0u);
    check_accounting(st);
  }
  // The default 1 MiB bound: a 900 KiB value in 64 KiB pieces is parsed, a 1.5 MiB one is dropped.
  Rng rng(12);
  Stream s;
  add_resp(s, {"SET", "fits", alnum(rng, 900u << 10)}, {{PD3_ACCESS_WRITE, "fits"}});
  add_resp(s, {"SET", "too-big", alnum(rng, 1536u << 10)}, {{PD3_ACCESS_WRITE, "too-big"}});
  add_resp(s, {"GET", "after"}, {{PD3_ACCESS_READ, "after"}});
  TapRig rig("resp");
  rig.open(1, true);
  for (size_t at = 0; at < s.bytes.size(); at += 64u << 10)
    rig.deliver(1, s.bytes.data() + at, std::min<size_t>(64u << 10, s.bytes.size() - at));
  CHECK(rig.got == (std::vector<Access>{{PD3_ACCESS_WRITE, "fits"}, {PD3_ACCESS_READ, "after"}}));
  CHECK_EQ(rig.tap->stats().pending_overflows, 1u);
  check_accounting(rig.tap->stats());
}

TEST(request_tap_total_pending_bound_holds_across_flows) {
  pd3::RequestTapOptions o;
  o.max_pending_bytes = 4096;
  o.max_pending_total = 8192;
  TapRig rig("resp", o);
  Rng rng(5);
  Stream s;
  add_resp(s, {"SET", "k", alnum(rng, 3500)}, {{PD3_ACCESS_WRITE, "k"}});  // fits one flow's bound
  for (uint64_t f = 1; f <= 3; ++f) {
    rig.open(f, true);
    rig.deliver(f, s.bytes.data(), 3000);  // an unfinished request held per flow
  }
  pd3::RequestTapStats st = rig.tap->stats();
  CHECK_EQ(st.pending_bytes, 6000u);
  CHECK_EQ(st.pending_overflows, 1u);  // the third flow found no room
  // The first two finish their request; the third one lost it and finds no later one.
  for (uint64_t f = 1; f <= 3; ++f) rig.deliver(f, s.bytes.data() + 3000, s.bytes.size() - 3000);
  CHECK(rig.got == (std::vector<Access>{{PD3_ACCESS_WRITE, "k"}, {PD3_ACCESS_WRITE, "k"}}));
  st = rig.tap->stats();
  CHECK_EQ(st.pending_bytes, 0u);
  check_accounting(st);
}

TEST(request_tap_full_queue_is_counted) {
  TapRig rig("resp", {}, 4096);
  Stream s;
  for (int i = 0; i < 1000; ++i) {
    const std::string k = "key-" + std::to_string(i);
    add_resp(s, {"GET", k}, {{PD3_ACCESS_READ, k}});
  }
  rig.open(1, true);
  rig.cb.deliver(1, s.bytes.data(), s.bytes.size(), false);  // no drain in between
  pd3::RequestTapStats st = rig.tap->stats();
  CHECK_EQ(st.accesses_read, 1000u);
  CHECK(st.queue_full > 800);  // 4 KiB hold about 128 records of short keys
  CHECK_EQ(st.queue_full, rig.queue.dropped());
  rig.drain();
  CHECK_EQ(rig.got.size() + st.queue_full, 1000u);
  REQUIRE(!rig.got.empty());
  CHECK(rig.got.front().key == "key-0");  // the oldest ones made it
  rig.got.clear();
  Stream more;
  add_resp(more, {"GET", "later"}, {});
  rig.deliver(1, more.bytes.data(), more.bytes.size());
  CHECK(rig.got == (std::vector<Access>{{PD3_ACCESS_READ, "later"}}));
}

TEST(request_tap_binary_parser_pieces_gaps_and_garbage) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng rng(300 + seed);
    const Stream s = binary_stream(rng, 200);
    {
      TapRig rig("binary");
      rig.open(1, true);
      rig.deliver_chunked(1, s, 0, s.bytes.size(), rng);
      CHECK(rig.got == s.all());
      CHECK_EQ(rig.tap->stats().bytes_parsed, uint64_t(s.bytes.size()));
    }
    {
      const size_t a = rng.below(uint32_t(s.bytes.size()));
      const size_t b = a + 1 + rng.below(uint32_t(std::min<size_t>(s.bytes.size() - a, 3000)));
      TapRig rig("binary");
      rig.open(1, true);
      rig.deliver_chunked(1, s, 0, a, rng);
      rig.deliver_chunked(1, s, b, s.bytes.size(), rng, true);
      CHECK(rig.got == s.accesses_where([&](size_t begin, size_t end) { return end <= a || begin >= b; }));
      check_accounting(rig.tap->stats());
    }
  }
  // A header with a bad magic between good requests.
  Rng rng(77);
  Stream s = binary_stream(rng, 10);
  const uint8_t bad[] = {12, 0, 0, 0, 0x55, 1, 1, 0, 4, 0, 'a', 'b', 'c', 'd'};
  s.bytes.insert(s.bytes.end(), bad, bad + sizeof bad);
  const Stream tail = binary_stream(rng, 10);
  for (const Request& r : tail.requests)
    s.requests.push_back({r.begin + s.bytes.size(), r.end + s.bytes.size(), r.accesses});
  s.bytes.insert(s.bytes.end(), tail.bytes.begin(), tail.bytes.end());
  TapRig rig("binary");
  rig.open(1, true);
  rig.deliver_chunked(1, s, 0, s.bytes.size(), rng);
  CHECK(rig.got == s.all());
  CHECK_EQ(rig.tap->stats().parse_errors, 1u);
  check_accounting(rig.tap->stats());
}


namespace {

std::atomic<int> g_flow_states{0};  // flows the counting parser has open

// relaxed (both): a test counter read after the calls, on the same thread.
void* counting_open(const pd3_parser*) {
  g_flow_states.fetch_add(1, std::memory_order_relaxed);
  return &g_flow_states;
}
void counting_close(void*) { g_flow_states.fetch_sub(1, std::memory_order_relaxed); }
void* failing_open(const pd3_parser*) { return nullptr; }

// RESP with per-flow state, to watch flow_open/flow_close.
const pd3_parser kCountingResp = [] {
  pd3_parser t = *pd3::resp_parser();
  t.name = "counting-resp";
  t.flow_open = counting_open;
  t.flow_close = counting_close;
  return t;
}();
// RESP whose flow_open always fails.
const pd3_parser kUnopenable = [] {
  pd3_parser t = kCountingResp;
  t.name = "unopenable";
  t.flow_open = failing_open;
  return t;
}();

int64_t resync_here(void*, const uint8_t*, size_t len) { return len > 0 ? 0 : -1; }
// Fills the output array from the first byte and never consumes anything.
int stuck_parse(void*, const uint8_t* buf, size_t, pd3_access* out, uint32_t max, uint32_t* n, size_t* consumed) {
  for (uint32_t i = 0; i < max; ++i) out[i] = pd3_access{buf, 1, PD3_ACCESS_READ};
  *n = max;
  *consumed = 0;
  return 0;
}
int refusing_parse(void*, const uint8_t*, size_t, pd3_access*, uint32_t, uint32_t* n, size_t* consumed) {
  *n = 0;
  *consumed = 0;
  return PD3_E_PROTOCOL;
}
// Claims to consume more than it was given (ParserFlow turns that into an error).
int overreaching_parse(void*, const uint8_t*, size_t len, pd3_access*, uint32_t, uint32_t* n, size_t* consumed) {
  *n = 0;
  *consumed = len + 5;
  return 0;
}
const pd3_parser kStuck = {PD3_PARSER_ABI_VERSION, 0, "stuck", nullptr, nullptr, stuck_parse, resync_here, nullptr};
const pd3_parser kRefusing = {PD3_PARSER_ABI_VERSION, 0, "refusing", nullptr, nullptr, refusing_parse, resync_here, nullptr};
const pd3_parser kOverreaching = {PD3_PARSER_ABI_VERSION, 0, "overreaching", nullptr, nullptr, overreaching_parse,
                                  resync_here, nullptr};

pd3::ParserHandle table(const pd3_parser* t) {
  pd3::ParserHandle h;
  if (pd3::use_parser_table(t, &h) != PD3_OK) std::fprintf(stderr, "  use_parser_table: %s\n", pd3_last_error());
  return h;
}

}  // namespace

TEST(request_tap_bounds_flows_and_closes_parser_state) {
  Stream get;
  add_resp(get, {"GET", "x"}, {{PD3_ACCESS_READ, "x"}});
  {
    pd3::RequestTapOptions o;
    o.max_flows = 2;
    TapRig rig(table(&kCountingResp), o);
    rig.open(1, true);
    rig.open(2, true);
    rig.open(3, true);  // over max_flows
    CHECK_EQ(g_flow_states.load(std::memory_order_relaxed), 2);
    rig.deliver(3, get.bytes.data(), get.bytes.size());  // still no room: not parsed
    pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.flows_refused, 2u);
    CHECK_EQ(st.bytes_refused, uint64_t(get.bytes.size()));
    CHECK(rig.got.empty());
    rig.close(1);
    rig.close(1);   // twice: harmless
    rig.close(77);  // never opened: harmless
    CHECK_EQ(g_flow_states.load(std::memory_order_relaxed), 1);
    // Now there is room: flow 3 gets state on its next delivery, unsynced; its bytes start a request.
    rig.deliver(3, get.bytes.data(), get.bytes.size());
    CHECK(rig.got == get.all());
    st = rig.tap->stats();
    CHECK_EQ(st.flows_open, 2u);
    CHECK_EQ(st.flows_unsynced, 1u);
    // An open for an id in use replaces its state (and drops what it held).
    rig.deliver(2, get.bytes.data(), 4);
    CHECK_EQ(rig.tap->stats().pending_bytes, 4u);
    rig.open(2, true);
    CHECK_EQ(rig.tap->stats().pending_bytes, 0u);
    CHECK_EQ(g_flow_states.load(std::memory_order_relaxed), 2);
    check_accounting(rig.tap->stats());
  }
  CHECK_EQ(g_flow_states.load(std::memory_order_relaxed), 0);  // the tap closed the rest
  TapRig rig(table(&kUnopenable), {});
  rig.open(1, true);
  rig.deliver(1, get.bytes.data(), get.bytes.size());
  CHECK_EQ(rig.tap->stats().flows_refused, 2u);
  CHECK_EQ(rig.tap->stats().flows_open, 0u);
  CHECK(rig.got.empty());
}

TEST(request_tap_broken_parsers_cannot_stall_or_break_it) {
  const uint8_t bytes[] = "0123456789";
  {
    TapRig rig(table(&kStuck), {}, 4096);
    rig.open(1, true);
    const auto t0 = std::chrono::steady_clock::now();
    rig.cb.deliver(1, bytes, 10, false);
    CHECK(pd3test::ms_since(t0) < 2000);
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.parse_errors, 1u);   // the first stall, on a flow in sync
    CHECK_EQ(st.resync_rejects, 9u);  // then one per resync candidate
    CHECK_EQ(st.bytes_skipped, 10u);
    CHECK_EQ(st.parse_calls, 160u);  // 16 calls without progress per start
    CHECK(st.queue_full > 0);
    check_accounting(st);
  }
  for (const pd3_parser* t : {&kRefusing, &kOverreaching}) {
    TapRig rig(table(t), {});
    rig.open(1, true);
    rig.deliver(1, bytes, 10);
    rig.deliver(1, bytes, 10);
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK(rig.got.empty());
    CHECK_EQ(st.parse_errors, 1u);
    CHECK_EQ(st.bytes_skipped, 20u);
    CHECK_EQ(st.bytes_parsed, 0u);
    check_accounting(st);
  }
}

TEST(request_tap_random_bytes_keep_the_accounting_and_keys_real) {
  static const char kAlphabet[] = "*$\r\n\r\n0123456789GETSMDLINCRabc \"'\xd3\x01\x02";
  for (uint64_t trial = 0; trial < 300; ++trial) {
    Rng rng(900 + trial);
    const char* name = trial % 2 ? "binary" : "resp";
    std::vector<uint8_t> bytes;
    // Random bytes mixed with real requests, so some parse and some do not.
    const Stream real = trial % 2 ? binary_stream(rng, 20) : resp_stream(rng, 20);
    for (size_t at = 0; at < real.bytes.size();) {
      if (rng.below(3) == 0)
        for (uint32_t i = 0, n = rng.below(40); i < n; ++i)
          bytes.push_back(rng.below(4) ? uint8_t(kAlphabet[rng.below(sizeof kAlphabet - 1)]) : uint8_t(rng.next()));
      const size_t n = std::min<size_t>(real.bytes.size() - at, 1 + rng.below(200));
      bytes.insert(bytes.end(), real.bytes.begin() + ptrdiff_t(at), real.bytes.begin() + ptrdiff_t(at + n));
      at += n;
    }
    pd3::RequestTapOptions o;
    o.max_pending_bytes = 1 + rng.below(2000);
    TapRig rig(name, o);
    if (rng.below(2)) rig.open(1, rng.below(2) == 0);
    // Some pieces are lost (the next one says so); some deliveries claim a gap anyway. A key must
    // lie within one run of bytes delivered without a gap.
    std::vector<std::string> runs(1);
    bool lost = false;
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng.below(300));
      if (rng.below(8) == 0) {
        lost = true;
      } else {
        const bool gap = lost || rng.below(10) == 0;
        if (gap) runs.emplace_back();
        runs.back().append(reinterpret_cast<const char*>(bytes.data() + at), n);
        rig.deliver(1, bytes.data() + at, n, gap);
        lost = false;
      }
      at += n;
    }
    check_accounting(rig.tap->stats());
    for (const Access& a : rig.got)
      CHECK(std::any_of(runs.begin(), runs.end(), [&](const std::string& r) { return r.find(a.key) != std::string::npos; }));
    rig.close(1);
    const pd3::RequestTapStats st = rig.tap->stats();
    CHECK_EQ(st.pending_bytes, 0u);
    CHECK_EQ(st.bytes_delivered, st.bytes_parsed + st.bytes_skipped + st.bytes_refused);
  }
}

namespace {

constexpr uint32_t kLoopback = 0x7F000001;

using pd3test::DiscardApp;

// Connects to 127.0.0.1:port and sends `bytes` in random pieces, then closes. False on failure.
bool send_stream(uint16_t port, const std::vector<uint8_t>& bytes, uint64_t seed) {
  pd3::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(kLoopback);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
  Rng rng(seed);
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng.below(rng.below(2) ? 50 : 20000));
    const ssize_t w = ::send(fd.get(), bytes.data() + at, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    at += size_t(w);
  }
  return true;
}

// Runs `clients` concurrent clients (RESP pipelines, keys prefixed by client) against `port`
// while this thread drains the tap's queue, and checks every client's accesses came out exact.
void run_clients_through(pd3::RequestTap& tap, pd3::AccessQueue& queue, uint16_t port, int clients) {
  std::vector<Stream> streams;
  size_t expected = 0, total_bytes = 0;
  for (int c = 0; c < clients; ++c) {
    Rng rng(4000 + uint64_t(c));
    streams.push_back(resp_stream(rng, 3000, "c" + std::to_string(c) + "-"));
    expected += streams.back().all().size();
    total_bytes += streams.back().bytes.size();
  }
  std::atomic<bool> done{false};
  std::atomic<uint64_t> polls{0}, went_back{0};
  // stats() from another thread while the backend's thread parses: cumulative counters never go back.
  std::thread poller([&] {
    uint64_t last_delivered = 0, last_parsed = 0;
    // relaxed (all): a stop flag and test counters; nothing is published through them.
    while (!done.load(std::memory_order_relaxed)) {
      const pd3::RequestTapStats st = tap.stats();
      if (st.bytes_delivered < last_delivered || st.bytes_parsed < last_parsed)
        went_back.fetch_add(1, std::memory_order_relaxed);
      last_delivered = st.bytes_delivered;
      last_parsed = st.bytes_parsed;
      polls.fetch_add(1, std::memory_order_relaxed);
    }
  });
  const uint64_t t_start = pd3::now_ns();
  std::atomic<int> sent_ok{0};
  std::vector<std::thread> senders;
  for (int c = 0; c < clients; ++c)
    senders.emplace_back([&, c] { sent_ok += send_stream(port, streams[size_t(c)].bytes, uint64_t(c)); });
  std::vector<Access> got;
  uint64_t stale = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (got.size() < expected && pd3test::ms_since(t0) < 15000) {
    const size_t n = queue.drain(SIZE_MAX, [&](const pd3::AccessRecord& r) {
      stale += r.capture_ns < t_start || r.capture_ns > pd3::now_ns();
      got.push_back({r.op, std::string(reinterpret_cast<const char*>(r.key), r.key_len)});
    });
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& t : senders) t.join();
  CHECK_EQ(sent_ok.load(), clients);
  CHECK_EQ(got.size(), expected);
  CHECK_EQ(stale, 0u);
  std::map<std::string, std::vector<Access>> by_client;
  for (const Access& a : got) by_client[a.key.substr(0, a.key.find('-'))].push_back(a);
  for (int c = 0; c < clients; ++c) CHECK(by_client["c" + std::to_string(c)] == streams[size_t(c)].all());
  // Every flow ends once its client closed.
  while (tap.stats().flows_open != 0 && pd3test::ms_since(t0) < 15000)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  done.store(true, std::memory_order_relaxed);  // relaxed: see the poller
  poller.join();
  CHECK(polls.load(std::memory_order_relaxed) > 0);
  CHECK_EQ(went_back.load(std::memory_order_relaxed), 0u);
  const pd3::RequestTapStats st = tap.stats();
  CHECK_EQ(st.flows_open, 0u);
  CHECK_EQ(st.flows_total, uint64_t(clients));
  CHECK_EQ(st.bytes_delivered, uint64_t(total_bytes));
  CHECK_EQ(st.bytes_parsed, uint64_t(total_bytes));
  CHECK_EQ(st.parse_errors + st.gaps + st.desyncs + st.queue_full, 0u);
  check_accounting(st);
}

}  // namespace

TEST(request_tap_behind_the_tee_proxy_gets_every_access) {
  DiscardApp app;
  REQUIRE(app.port != 0);
  pd3::AccessQueue queue(8u << 20);
  std::unique_ptr<pd3::RequestTap> tap;
  REQUIRE(pd3::RequestTap::create({}, parser("resp"), &queue, &tap) == PD3_OK);
  pd3::TeeProxyOptions o;
  o.listen = {"127.0.0.1", 0};
  o.app = {"127.0.0.1", app.port};
  std::unique_ptr<pd3::TeeProxy> proxy;
  REQUIRE(pd3::TeeProxy::start(o, tap->callbacks(), &proxy) == PD3_OK);
  run_clients_through(*tap, queue, proxy->port(), 4);
  proxy->stop();
}

TEST(request_tap_behind_the_packet_mirror_gets_every_access) {
  if (!pd3::packet_capture_permitted()) {
    std::printf("    [request tap] packet mirror case skipped: AF_PACKET is not permitted here (needs CAP_NET_RAW)\n");
    return;
  }
  DiscardApp app;
  REQUIRE(app.port != 0);
  pd3::AccessQueue queue(8u << 20);
  std::unique_ptr<pd3::RequestTap> tap;
  REQUIRE(pd3::RequestTap::create({}, parser("resp"), &queue, &tap) == PD3_OK);
  pd3::MirrorOptions o;
  o.interface = "lo";
  o.ip = kLoopback;
  o.port = app.port;
  o.block_count = 256;  // 64 MiB of ring: exactness must not depend on the thread's scheduling
  std::unique_ptr<pd3::PacketMirror> mirror;
  const int rc = pd3::PacketMirror::start(o, tap->callbacks(), &mirror);
  if (rc != PD3_OK) std::fprintf(stderr, "  PacketMirror::start: %s\n", pd3_last_error());
  REQUIRE(rc == PD3_OK);
  run_clients_through(*tap, queue, app.port, 4);
  mirror->stop();
}
