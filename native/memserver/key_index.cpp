// key_index.cpp — see key_index.hpp.
#include "memserver/key_index.hpp"

#include <cassert>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

// One table slot, as stored in memory and in the index file.
struct KeyIndex::Slot {
  uint64_t hash;     // kEmpty, kTombstone, or a key hash (≥ 2)
  uint64_t address;  // pack_address(region, offset)
};

// The first bytes of the index file (the rest of its first page is zero). The slots are the
// truth: the counts are recomputed when the file is opened.
struct KeyIndex::Header {
  uint64_t magic;  // kMagic
  uint32_t version;
  uint16_t server_id;
  uint16_t reserved;
  uint64_t slots;  // table capacity, a power of two
  uint64_t keys;   // slots holding a key
  uint64_t tombstones;
};

namespace {

constexpr uint64_t kMagic = 0x3158444E49334450ull;  // "PD3INDX1", little-endian
// Bump when the layout, the address packing or key_hash64 changes. 2: 32-bit region ids in the
// addresses (version 1 packed 16-bit ones: its addresses would name the wrong regions).
constexpr uint32_t kVersion = 2;
constexpr uint64_t kHeaderBytes = 4096;             // one page, so the slots start page-aligned
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = 1;
constexpr uint64_t kMinSlots = 64;
constexpr uint64_t kMaxSlots = uint64_t(1) << 38;    // 4 TiB of slots: beyond any real server
constexpr uint64_t kMaxInitialKeys = uint64_t(1) << 36;

uint64_t stored_hash(uint64_t hash) { return hash <= kTombstone ? hash + 2 : hash; }

// Slots in use (keys + tombstones) a table may have: 3/4 keeps linear probe chains short.
uint64_t max_fill(uint64_t slots) { return slots / 4 * 3; }

uint64_t slots_for(uint64_t keys) {
  uint64_t slots = kMinSlots;
  while (max_fill(slots) < keys) slots <<= 1;
  return slots;
}

uint64_t table_bytes(uint64_t slots) { return kHeaderBytes + slots * 16; }

}  // namespace

int KeyIndex::open(const KeyIndexOptions& options, std::unique_ptr<KeyIndex>* out) {
  static_assert(sizeof(Slot) == 16, "index slots are 16 bytes");
  static_assert(sizeof(Header) <= kHeaderBytes, "the header fits its page");
  if (options.initial_keys == 0 || options.initial_keys > kMaxInitialKeys)
    return fail(PD3_E_INVAL, "index_initial_keys %llu outside [1, 2^36]", (unsigned long long)options.initial_keys);
  std::unique_ptr<KeyIndex> index(new KeyIndex(options));
  index->track_dirty_ = options.dir != nullptr && options.dir->durable();
  int rc;
  if (options.dir != nullptr && options.dir->exists(kFileName)) {
    Mapping memory;
    UniqueFd fd;
    uint64_t size = 0;
    rc = options.dir->map(kFileName, table_bytes(kMaxSlots), &memory, &size, &fd);
    if (rc == PD3_OK) rc = index->adopt_file(std::move(memory), std::move(fd), size);
  } else {
    rc = index->create_table(slots_for(options.initial_keys), false);
  }
  if (rc != PD3_OK) return rc;
  *out = std::move(index);
  return PD3_OK;
}

int KeyIndex::adopt_file(Mapping memory, UniqueFd fd, uint64_t size) {
  const std::string& dir = options_.dir->path();
  if (size < kHeaderBytes || memory.data() == nullptr)
    return fail(PD3_E_CORRUPT, "index file %s/%s has %llu bytes: not a PD3 index", dir.c_str(), kFileName,
                (unsigned long long)size);
  Header h;
  std::memcpy(&h, memory.data(), sizeof h);
  if (h.magic != kMagic) return fail(PD3_E_CORRUPT, "%s/%s is not a PD3 index file (bad magic)", dir.c_str(), kFileName);
  if (h.version != kVersion)
    return fail(PD3_E_CORRUPT,
                "index file %s/%s has version %u, this server reads version %u only%s", dir.c_str(), kFileName,
                unsigned(h.version), unsigned(kVersion),
                h.version < kVersion ? " (written before region ids were 32-bit: start this server with an empty "
                                       "data_dir)"
                                     : "");
  if (h.server_id != options_.server_id)
    return fail(PD3_E_INVAL, "data_dir %s belongs to memory server %u, not to server %u", dir.c_str(),
                unsigned(h.server_id), unsigned(options_.server_id));
  if (h.slots < kMinSlots || h.slots > kMaxSlots || (h.slots & (h.slots - 1)) != 0)
    return fail(PD3_E_CORRUPT, "index file %s/%s claims %llu slots", dir.c_str(), kFileName, (unsigned long long)h.slots);
  if (size != table_bytes(h.slots))
    return fail(PD3_E_CORRUPT, "index file %s/%s has %llu bytes, its header needs %llu (truncated?)", dir.c_str(),
                kFileName, (unsigned long long)size, (unsigned long long)table_bytes(h.slots));
  memory_ = std::move(memory);
  file_ = std::make_shared<const UniqueFd>(std::move(fd));
  mask_ = h.slots - 1;
  uint64_t keys = 0, tombstones = 0;
  const Slot* t = table();
  for (uint64_t i = 0; i < h.slots; ++i) {
    keys += t[i].hash > kTombstone;
    tombstones += t[i].hash == kTombstone;
  }
  // At most 3/4 full is what keeps every probe loop finite (an empty slot always exists).
  if (keys + tombstones > max_fill(h.slots))
    return fail(PD3_E_CORRUPT, "index file %s/%s has %llu of %llu slots in use, more than 3/4", dir.c_str(), kFileName,
                (unsigned long long)(keys + tombstones), (unsigned long long)h.slots);
  Header* live = header();
  if (live->keys != keys || live->tombstones != tombstones) {
    live->keys = keys;
    live->tombstones = tombstones;
    mark_dirty(0, sizeof(Header));
  }
  return PD3_OK;
}

int KeyIndex::create_table(uint64_t slots, bool copy_entries) {
  const auto fill = [&](Mapping& m) {
    Header h{kMagic, kVersion, options_.server_id, 0, slots, 0, 0};
    Slot* t = reinterpret_cast<Slot*>(m.data() + kHeaderBytes);
    const uint64_t mask = slots - 1;
    if (copy_entries) {
      const Slot* old = table();
      for (uint64_t i = 0; i <= mask_; ++i) {
        const Slot s = old[i];
        if (s.hash <= kTombstone || (options_.keep && !options_.keep(s.address))) continue;
        uint64_t j = s.hash & mask;
        while (t[j].hash != kEmpty) j = (j + 1) & mask;
        t[j] = s;
        ++h.keys;
      }
    }
    std::memcpy(m.data(), &h, sizeof h);
    return PD3_OK;
  };
  Mapping m;
  UniqueFd fd;
  int rc;
  if (options_.dir != nullptr) {
    rc = options_.dir->create(kFileName, table_bytes(slots), fill, &m, &fd);
  } else {
    rc = Mapping::anonymous(table_bytes(slots), &m);
    if (rc == PD3_OK) rc = fill(m);
  }
  if (rc != PD3_OK) return rc;
  // The new table is complete (and, in a durable directory, already on disk): nothing is pending.
  memory_ = std::move(m);
  // An fdatasync still holding the old file's descriptor keeps it open; it syncs a file now unlinked.
  file_ = fd.valid() ? std::make_shared<const UniqueFd>(std::move(fd)) : nullptr;
  mask_ = slots - 1;
  forget_changes();
  return PD3_OK;
}

int KeyIndex::rebuild() {
  // Double when the keys alone fill more than 3/8; otherwise the table is mostly tombstones and a
  // rebuild at the same size clears them.
  const uint64_t slots = (keys() + 1) * 8 > this->slots() * 3 ? this->slots() * 2 : this->slots();
  if (slots > kMaxSlots) return fail(PD3_E_NOSPACE, "index at its limit of %llu slots", (unsigned long long)kMaxSlots);
  return create_table(slots, true);
}

KeyIndex::Header* KeyIndex::header() const { return reinterpret_cast<Header*>(memory_.data()); }
KeyIndex::Slot* KeyIndex::table() const { return reinterpret_cast<Slot*>(memory_.data() + kHeaderBytes); }
uint64_t KeyIndex::keys() const { return header()->keys; }
uint64_t KeyIndex::tombstones() const { return header()->tombstones; }

void KeyIndex::mark_dirty(uint64_t lo, uint64_t hi) {
  if (!track_dirty_) return;
  if (lo < dirty_lo_) dirty_lo_ = lo;
  if (hi > dirty_hi_) dirty_hi_ = hi;
}

void KeyIndex::forget_changes() {
  dirty_lo_ = UINT64_MAX;
  dirty_hi_ = 0;
}

void KeyIndex::mark_slot_dirty(uint64_t i) { mark_dirty(kHeaderBytes + i * sizeof(Slot), kHeaderBytes + (i + 1) * sizeof(Slot)); }

int KeyIndex::put(uint64_t hash, uint64_t address) {
  const uint64_t h = stored_hash(hash);
  Slot* t = table();
  uint64_t i = h & mask_;
  uint64_t reuse = UINT64_MAX;  // the first tombstone on the probe path: where a new key goes
  for (;; i = (i + 1) & mask_) {
    if (t[i].hash == h) {
      t[i].address = address;
      mark_slot_dirty(i);
      return PD3_OK;
    }
    if (t[i].hash == kEmpty) break;
    if (t[i].hash == kTombstone && reuse == UINT64_MAX) reuse = i;
  }
  if (reuse != UINT64_MAX) {
    i = reuse;
    --header()->tombstones;
  } else if (keys() + tombstones() + 1 > max_fill(slots())) {
    if (int rc = rebuild(); rc != PD3_OK) return rc;
    t = table();
    for (i = h & mask_; t[i].hash != kEmpty; i = (i + 1) & mask_) {
    }
  }
  t[i] = Slot{h, address};
  ++header()->keys;
  mark_slot_dirty(i);
  mark_dirty(0, sizeof(Header));
  return PD3_OK;
}

bool KeyIndex::find(uint64_t hash, uint64_t* address) const {
  const uint64_t h = stored_hash(hash);
  const Slot* t = table();
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    if (t[i].hash == h) {
      *address = t[i].address;
      return true;
    }
    if (t[i].hash == kEmpty) return false;
  }
}

bool KeyIndex::erase(uint64_t hash) {
  const uint64_t h = stored_hash(hash);
  Slot* t = table();
  uint64_t i = h & mask_;
  for (;; i = (i + 1) & mask_) {
    if (t[i].hash == h) break;
    if (t[i].hash == kEmpty) return false;
  }
  Header* hd = header();
  --hd->keys;
  mark_slot_dirty(i);
  mark_dirty(0, sizeof(Header));
  if (t[(i + 1) & mask_].hash != kEmpty) {
    // A later key may have probed past this slot: leave a tombstone so its chain stays connected.
    t[i] = Slot{kTombstone, 0};
    ++hd->tombstones;
    return true;
  }
  // The chain ends here, so this slot and the tombstones right before it carry no chain any more.
  t[i] = Slot{kEmpty, 0};
  for (uint64_t j = (i - 1) & mask_; t[j].hash == kTombstone; j = (j - 1) & mask_) {
    t[j] = Slot{kEmpty, 0};
    --hd->tombstones;
    mark_slot_dirty(j);
  }
  return true;
}

uint64_t KeyIndex::erase_if(const std::function<bool(uint64_t address)>& drop) {
  Slot* t = table();
  Header* hd = header();
  uint64_t removed = 0, lo = UINT64_MAX, hi = 0;
  for (uint64_t i = 0; i <= mask_; ++i) {
    if (t[i].hash <= kTombstone || !drop(t[i].address)) continue;
    t[i] = Slot{kTombstone, 0};
    ++removed;
    if (i < lo) lo = i;
    hi = i + 1;
  }
  if (removed == 0) return 0;
  hd->keys -= removed;
  hd->tombstones += removed;
  mark_dirty(kHeaderBytes + lo * sizeof(Slot), kHeaderBytes + hi * sizeof(Slot));
  mark_dirty(0, sizeof(Header));
  return removed;
}

int KeyIndex::sync(uint64_t* flushes) {
  if (!track_dirty_ || dirty_lo_ >= dirty_hi_) return PD3_OK;
  if (int rc = memory_.flush(dirty_lo_, dirty_hi_); rc != PD3_OK) return rc;
  ++*flushes;
  forget_changes();
  return PD3_OK;
}

bool KeyIndex::hand_off_changes(std::shared_ptr<const UniqueFd>* file) {
  if (!track_dirty_ || dirty_lo_ >= dirty_hi_) return false;
  assert(file_ != nullptr);  // track_dirty_ means a durable data directory, so a file
  *file = file_;
  forget_changes();
  return true;
}

}  // namespace pd3
