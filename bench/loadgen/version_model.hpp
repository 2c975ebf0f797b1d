// version_model.hpp — what --verify checks reads against: for each record, the versions a read may
// legitimately return given what this client sent and when the server answered.
//
// With several connections, requests on one key overlap, and the server may apply overlapping
// writes in either order. So the model keeps, per key, the writes that are not yet certainly
// overwritten, each with the (logical) times it was sent and acknowledged. A read may return the
// value of write w if w was sent before the read's reply arrived (any write in the list was) and no
// write w' was acknowledged before the read was sent while itself sent after w's acknowledgement
// (then w' certainly came after w and before the read). That is: ack(w) > A, where A is the latest
// send time among writes acknowledged before the read was sent — the read's ticket. A write refused
// with an error may or may not have been applied: it stays possible but never overrules another.
//
// Keys with nothing in flight and a single possible version live in a flat array (8 bytes per
// record); only keys with operations in flight (or ambiguous after overlapping writes) have a list.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "value_format.hpp"

namespace pd3::loadgen {

// A read's snapshot of its key (A above), taken when the read was sent.
using ReadTicket = uint64_t;

// Per-key versions and the writes and reads in flight.
class VersionModel {
 public:
  // Records 0 .. records − 1 hold `initial` (0 after --load; kHashmapLoad for the hash map's load).
  void reset(uint64_t records, uint64_t initial);
  // The next record an INSERT creates (keys come in order): absent until written.
  void add_record(uint64_t key);
  uint64_t records() const { return stable_.size(); }

  [[nodiscard]] ReadTicket begin_read(uint64_t key);
  // Ends a read that returned `got` (nullptr: not found). True if some possible version has those
  // bytes; otherwise false with the possible versions in *possible (for the message).
  [[nodiscard]] bool finish_read(uint64_t key, ReadTicket t, const std::string_view* got, ValueFormat& values,
                                 std::vector<uint64_t>* possible);
  // Ends a read that got no usable answer (an error reply, a lost connection): nothing to check.
  void abandon_read(uint64_t key, ReadTicket t);
  void begin_write(uint64_t key, uint64_t version);
  // applied: the server acknowledged it; false: it answered an error (applied or not, unknown).
  void finish_write(uint64_t key, uint64_t version, bool applied);

  // Keys with a list now (tests: drops back to 0 once nothing is in flight and all is settled).
  size_t active_keys() const { return active_.size(); }

 private:
  // One write still possibly visible.
  struct Write {
    uint64_t version;
    uint64_t sent;
    uint64_t acked;     // 0 while in flight
    bool may_overrule;  // acknowledged as stored (not an error reply)
  };
  // The list of one busy key.
  struct Busy {
    std::vector<Write> writes;
    std::vector<ReadTicket> reads;  // tickets of the reads in flight
    uint64_t max_acked_send = 0;    // A for a read sent now
  };

  Busy& busy(uint64_t key);
  // Removes one in-flight read with ticket t from key's list; the list's index, or UINT32_MAX.
  uint32_t end_read(uint64_t key, ReadTicket t);
  // Drops writes no read can return any more; back to the flat array when one version is left.
  void settle(uint64_t key, uint32_t index);

  std::vector<uint64_t> stable_;  // version per record when not busy
  std::unordered_map<uint64_t, uint32_t> active_;  // key → index in pool_
  std::vector<Busy> pool_;
  std::vector<uint32_t> free_;
  uint64_t clock_ = 2;  // logical time; 1 is the "acknowledgement" of the stable version
};

}  // namespace pd3::loadgen
