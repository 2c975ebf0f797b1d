// lying_parser.cpp — a parser plug-in whose parse_record lies on purpose, for
// test/native/memstore_record_parser_test.cpp: honest answers in a tiny record format until the
// test picks a lie (lying_parser.hpp) with pd3_lying_parser_set_lie(), then answers that break
// pd3/parser.h's rules in that one way. Whoever calls it must refuse every lie and never read
// outside the buffer it handed in. Its records, back to back:
//
//   u8 key_len | key | u8 value_len | value      (key_len 0 ends the sequence)
//
// It knows no client requests: parse_request consumes everything and reports no key.
#include <atomic>
#include <cstdint>

#include "lying_parser.hpp"
#include "pd3/parser.h"
#include "pd3/status.h"
#include "pd3/wire.h"

namespace {

using pd3test::Lie;

// The lie told now. Relaxed: a lone setting read on each call; no other data travels with it, and
// the test sets it before the calls it wants lied to.
std::atomic<int> g_lie{int(Lie::kHonest)};

int parse_request(void*, const uint8_t*, size_t len, pd3_access*, uint32_t, uint32_t* n, size_t* consumed) {
  *n = 0;
  *consumed = len;
  return PD3_OK;
}

int64_t resync(void*, const uint8_t*, size_t len) { return len > 0 ? 0 : -1; }

// The honest answer: the records at the start of buf[0, len), up to max.
uint32_t honest_records(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max) {
  uint32_t n = 0;
  uint64_t at = 0;
  while (n < max && len - at >= 2 && buf[at] != 0) {
    const uint64_t key_len = buf[at];
    if (len - at - 2 < key_len) break;
    const uint64_t value_len = buf[at + 1 + key_len];
    const uint64_t value_off = at + 2 + key_len;
    if (len - value_off < value_len) break;
    out[n++] = pd3_record_key{at + 1, value_off, value_len, uint32_t(key_len), 0, at, 2 + key_len + value_len};
    at = value_off + value_len;
  }
  return n;
}

int parse_record(const uint8_t* buf, size_t len, pd3_record_key* out, uint32_t max, uint32_t* n) {
  const Lie lie = Lie(g_lie.load(std::memory_order_relaxed));
  *n = honest_records(buf, len, out, max);
  if (lie == Lie::kNegativeStatus) return PD3_E_PROTOCOL;
  if (lie == Lie::kPositiveStatus) return 1;
  if (lie == Lie::kTooManyKeys) {
    *n = max + 1;
    return PD3_OK;
  }
  if (*n == 0) return PD3_OK;
  pd3_record_key& k = out[0];
  const uint64_t record_end = k.record_off + k.record_len;
  switch (lie) {
    case Lie::kKeyPastRecord: k.key_off = record_end - 1, k.key_len = 2; break;
    case Lie::kRecordPastBuffer: k.record_len = len - k.record_off + 1; break;
    case Lie::kValueAfterRecord: k.value_off = record_end, k.value_len = 1; break;
    case Lie::kKeyAfterRecord: k.key_off = record_end; break;
    case Lie::kEmptyKey: k.key_len = 0; break;
    case Lie::kOverlongKey: k.key_len = PD3_MAX_KEY_LEN + 1, k.record_len = len - k.record_off; break;
    case Lie::kKeyOffsetWraps: k.key_off = UINT64_MAX - 1, k.key_len = 4; break;
    case Lie::kRecordOffsetWraps: k.record_off = UINT64_MAX - 2, k.record_len = 8; break;
    case Lie::kOverlap:
      if (*n >= 2) out[1] = out[0];
      break;
    default: break;
  }
  return PD3_OK;
}

constexpr pd3_parser kParser = {
    PD3_PARSER_ABI_VERSION, 0, "lying-records", nullptr, nullptr, parse_request, resync, parse_record,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const pd3_parser* pd3_parser_entry(void) { return &kParser; }

// Picks the lie parse_record tells from now on (a pd3test::Lie).
extern "C" __attribute__((visibility("default"))) void pd3_lying_parser_set_lie(int lie) {
  g_lie.store(lie, std::memory_order_relaxed);
}
