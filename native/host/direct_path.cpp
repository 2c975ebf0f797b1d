// direct_path.cpp — see direct_path.hpp.
#include "host/direct_path.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

DirectPath::DirectPath(DirectOptions options)
    : options_(std::move(options)),
      placement_(options_.placement, uint64_t(options_.refraction_ms) * 1'000'000, now_ns()) {
  for (const Endpoint& ep : options_.servers) add_link_locked(ep);
}

std::unique_ptr<DirectPath::Link> DirectPath::new_link(const Endpoint& endpoint, size_t index) {
  auto l = std::make_unique<Link>();
  l->endpoint = endpoint;
  l->index = index;
  return l;
}

void DirectPath::add_link_locked(const Endpoint& endpoint) { links_.push_back(new_link(endpoint, links_.size())); }

int DirectPath::set_member(const Endpoint& endpoint, bool member) {
  assert(!endpoint.host.empty() && endpoint.port != 0);
  std::lock_guard lock(mu_);
  for (auto& l : links_) {
    if (l->endpoint == endpoint) {
      // Known: placeable or not from now on. Its connection is left alone either way: a server
      // that left may still hold regions, which are served while it answers.
      placement_.set_live(l->index, member);
      return PD3_OK;
    }
  }
  if (!member) return PD3_OK;  // never known here: nothing to take out
  if (links_.size() < kMaxPlacementServers) {
    add_link_locked(endpoint);  // connected on first use, placed once its hello succeeds
    return PD3_OK;
  }
  // No room: take the place of a server that left the pool and is not connected (a link without
  // a socket holds no request). Its regions were unreachable anyway.
  for (auto& l : links_) {
    if (placement_.live(l->index) || l->fd >= 0) continue;
    assert(l->sent.empty() && l->queued_ids.empty());
    const size_t index = l->index;
    l = new_link(endpoint, index);
    placement_.reset(index);
    return PD3_OK;
  }
  return fail(PD3_E_NOSPACE, "%s joined the pool, but direct mode serves %zu memory servers at most and none of them left",
              endpoint.str().c_str(), kMaxPlacementServers);
}

DirectPath::~DirectPath() {
  for (auto& l : links_)
    if (l->fd >= 0) ::close(l->fd);
}

int DirectPath::ensure_connected_locked(Link& l) {
  if (l.fd >= 0) return PD3_OK;
  const uint64_t now = now_ns();
  if (now < l.retry_after_ns)
    return fail(l.last_error, "memory server %s: %s (retrying shortly)", l.endpoint.str().c_str(),
                pd3_status_str(l.last_error));
  int fd = -1;
  int rc = tcp_connect(l.endpoint, int(options_.timeout_ms), &fd);
  pd3_hello_reply reply{};
  if (rc == PD3_OK) {
    // Any order: a frame whose writes wait for the server's disk does not hold back later reads.
    rc = client_hello(fd, options_.token, options_.tenant, int(options_.timeout_ms), &reply, PD3_HELLO_ANY_ORDER);
    if (rc != PD3_OK) ::close(fd);
  }
  if (rc != PD3_OK) {
    l.retry_after_ns = now_ns() + uint64_t(options_.retry_ms) * 1000000ull;
    l.last_error = rc == PD3_E_AUTH || rc == PD3_E_BAD_VERSION ? rc : PD3_E_UNAVAILABLE;
    return l.last_error;
  }
  l.fd = fd;
  l.server_id = reply.server_id;
  l.free_bytes = reply.free_bytes;
  l.reader = FrameReader(PD3_FRAME_MAX_LIMIT);
  return PD3_OK;
}

DirectPath::Link* DirectPath::link_for_region_locked(uint32_t region, int* err) {
  const int want = int(pd3_region_server(region));
  bool all_known = true;
  int last = PD3_OK;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& l : links_) {
      if (l->server_id == want) {
        *err = ensure_connected_locked(*l);
        return *err == PD3_OK ? l.get() : nullptr;
      }
    }
    if (pass == 1) break;
    // Server ids are learnt from hellos: connect to the servers not heard from yet.
    for (auto& l : links_) {
      if (l->server_id >= 0) continue;
      if (const int rc = ensure_connected_locked(*l); rc != PD3_OK) {
        all_known = false;
        last = rc;
      }
    }
  }
  *err = all_known ? fail(PD3_E_BAD_REGION, "no memory server has id %d (region %u)", want, unsigned(region))
                   : (last ? last : PD3_E_UNAVAILABLE);
  return nullptr;
}

DirectPath::Link* DirectPath::link_for_allocation_locked(int* err) {
  *err = PD3_E_UNAVAILABLE;
  candidates_.resize(links_.size());
  bool any_member = false;
  for (auto& l : links_) {
    if (!placement_.live(l->index)) {  // left the pool: no new region, so no connection for one
      candidates_[l->index] = {false, 0};
      continue;
    }
    any_member = true;
    const int rc = ensure_connected_locked(*l);
    if (rc != PD3_OK) *err = rc;  // why, if no server is reachable
    candidates_[l->index] = {rc == PD3_OK, l->free_bytes};
  }
  if (!any_member) *err = fail(PD3_E_UNAVAILABLE, "every memory server left the pool: none takes a new region");
  const int i = placement_.pick(candidates_, 0, 0, now_ns());
  if (i < 0) return nullptr;
  *err = PD3_OK;
  return links_[size_t(i)].get();
}

int DirectPath::submit(const Request& request) {
  std::lock_guard lock(mu_);
  return submit_locked(request);
}

void DirectPath::submit_all(std::span<const Request> requests, std::span<int> statuses) {
  assert(requests.size() == statuses.size());
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < requests.size(); ++i) statuses[i] = submit_locked(requests[i]);
}

int DirectPath::submit_locked(const Request& request) {
  const pd3_request& hdr = request.hdr;
  const uint32_t op = pd3_op_of(hdr.op_id);
  uint16_t ctl = 0;
  int err = PD3_OK;
  Link* l = nullptr;
  if (op == PD3_OP_READ || op == PD3_OP_WRITE) {
    l = link_for_region_locked(hdr.region, &err);
  } else if (op == PD3_OP_CONTROL && hdr.region == PD3_CTL_ALLOCATE) {
    ctl = PD3_CTL_ALLOCATE;
    l = link_for_allocation_locked(&err);
  } else if (op == PD3_OP_CONTROL && hdr.region == PD3_CTL_DEALLOCATE) {
    ctl = PD3_CTL_DEALLOCATE;
    l = link_for_region_locked(hdr.offset, &err);
  } else {
    return fail(PD3_E_BAD_OP, "direct mode carries READ, WRITE, ALLOCATE and DEALLOCATE only");
  }
  if (l == nullptr) return err;
  const pd3_request rec = pd3_make_request(pd3_op_id(op, request.id), hdr.region, hdr.offset, hdr.size);
  const auto* p = reinterpret_cast<const uint8_t*>(&rec);
  l->queued.insert(l->queued.end(), p, p + sizeof rec);
  if (request.payload_len) {
    const auto* d = static_cast<const uint8_t*>(request.payload);
    l->queued.insert(l->queued.end(), d, d + request.payload_len);
  }
  ++l->queued_records;
  l->queued_ids.push_back({rec.op_id, ctl});
  // A big backlog is sent now rather than at the next poll; a failure surfaces at that poll.
  if (l->queued.size() >= options_.flush_bytes) flush_locked(*l);
  return PD3_OK;
}

int DirectPath::flush_locked(Link& l) {
  if (l.queued_records > 0) {
    FrameBuilder b(&l.out.bytes());
    b.begin(PD3_FRAME_REQUEST, l.next_seq++);
    b.raw(l.queued.data(), l.queued.size(), l.queued_records);
    b.finish();
    l.queued.clear();
    l.queued_records = 0;
    std::vector<Link::Pending> next;
    if (!l.spare_ids.empty()) {
      next = std::move(l.spare_ids.back());
      l.spare_ids.pop_back();
    }
    l.sent.push_back(Link::SentFrame{l.next_seq - 1, now_ns(), std::exchange(l.queued_ids, std::move(next))});
  }
  // What a full socket does not take stays queued for the next pump (wait() watches for room):
  // blocking here could deadlock against a server that is itself waiting for us to read.
  return l.out.flush(l.fd);
}

int DirectPath::fail_link_locked(Link& l, const Done& done, const char* why, int status) {
  fail(status, "memory server %s: %s", l.endpoint.str().c_str(), why);
  l.last_error = PD3_E_UNAVAILABLE;
  if (l.fd >= 0) ::close(l.fd);
  l.fd = -1;
  l.retry_after_ns = now_ns() + uint64_t(options_.retry_ms) * 1000000ull;
  l.out = OutBuffer();
  l.reader = FrameReader(PD3_FRAME_MAX_LIMIT);
  l.queued.clear();
  l.queued_records = 0;
  int n = 0;
  const auto fail_all = [&](std::vector<Link::Pending>& ids) {
    batch_.clear();
    for (const Link::Pending& p : ids) {
      TransportResponse r;
      r.op_id = p.op_id;
      r.status = uint16_t(-status);
      batch_.push_back(r);
    }
    if (!batch_.empty()) done(batch_);
    n += int(ids.size());
    ids.clear();
  };
  for (Link::SentFrame& f : l.sent) fail_all(f.ids);
  l.sent.clear();
  fail_all(l.queued_ids);
  return n;
}

int DirectPath::receive_locked(Link& l, const Done& done) {
  int n = 0;
  for (;;) {
    const long got = l.reader.fill(l.fd);
    for (;;) {
      pd3_frame f;
      const uint8_t* body;
      const int rc = l.reader.next(&f, &body);
      if (rc == 0) break;
      if (rc < 0 || f.kind != PD3_FRAME_RESPONSE || validate_responses(body, f.length - sizeof f, f.count) != PD3_OK)
        return n + fail_link_locked(l, done, "malformed response frame");
      if (!complete_frame_locked(l, f, body, done, &n))
        return n + fail_link_locked(l, done, "response that matches no request frame in flight");
    }
    if (got < 0) return n + fail_link_locked(l, done, "connection closed");
    if (got == 0) return n;
  }
}

bool DirectPath::complete_frame_locked(Link& l, const pd3_frame& f, const uint8_t* body, const Done& done,
                                       int* completed) {
  const auto it = std::find_if(l.sent.begin(), l.sent.end(), [&](const Link::SentFrame& s) { return s.seq == f.seq; });
  if (it == l.sent.end() || it->ids.size() != f.count) return false;
  const size_t len = f.length - sizeof f;
  size_t pos = 0;
  batch_.clear();
  for (uint32_t i = 0; i < f.count; ++i) {
    const Link::Pending p = it->ids[i];
    TransportResponse r;
    decode_response(body + pos, len - pos, &r);
    pos += r.record_len;
    if (r.op_id != p.op_id) {  // the ones before are complete: the caller fails the rest with the link
      if (!batch_.empty()) done(batch_);
      *completed += int(batch_.size());
      it->ids.erase(it->ids.begin(), it->ids.begin() + i);
      return false;
    }
    // A server out of room rests for the refraction period (the caller may allocate again).
    // (r.status is the status's magnitude.)
    if (p.ctl == PD3_CTL_ALLOCATE && -int(r.status) == PD3_E_NOSPACE) placement_.refused(l.index, now_ns());
    if (p.ctl == PD3_CTL_ALLOCATE && r.status == 0 && r.data_len >= sizeof(pd3_alloc_reply)) {
      pd3_alloc_reply a;
      std::memcpy(&a, r.data, sizeof a);
      l.free_bytes = l.free_bytes > a.capacity ? l.free_bytes - a.capacity : 0;
    }
    batch_.push_back(r);
  }
  if (!batch_.empty()) done(batch_);
  *completed += int(batch_.size());
  std::vector<Link::Pending> ids = std::move(it->ids);
  l.sent.erase(it);
  ids.clear();
  if (l.spare_ids.size() < 8) l.spare_ids.push_back(std::move(ids));
  return true;
}

int DirectPath::pump(const Done& done) {
  std::lock_guard lock(mu_);
  int n = 0;
  for (auto& l : links_) {
    if (l->fd < 0) {
      if (!l->queued_ids.empty()) n += fail_link_locked(*l, done, "not connected");
      continue;
    }
    if (l->queued_records > 0 || !l->out.empty()) {
      if (flush_locked(*l) != PD3_OK) {
        n += fail_link_locked(*l, done, "send failed");
        continue;
      }
    }
    if (!l->sent.empty() || l->reader.buffered() > 0) n += receive_locked(*l, done);
    if (l->fd >= 0 && !l->sent.empty() &&
        now_ns() - l->sent.front().sent_ns > uint64_t(options_.request_timeout_ms) * 1000000ull)
      n += fail_link_locked(*l, done, "no answer within the request timeout", PD3_E_TIMEOUT);
  }
  return n;
}

int DirectPath::wait(uint32_t timeout_us) {
  std::vector<pollfd> fds;
  {
    std::lock_guard lock(mu_);
    for (auto& l : links_) {
      if (l->fd < 0 || (l->sent.empty() && l->out.empty())) continue;
      fds.push_back({l->fd, short(POLLIN | (l->out.empty() ? 0 : POLLOUT)), 0});
    }
  }
  if (fds.empty()) return 0;
  const timespec ts{time_t(timeout_us / 1000000), long(timeout_us % 1000000) * 1000};
  return ::ppoll(fds.data(), fds.size(), &ts, nullptr) > 0 ? 1 : 0;
}

uint64_t DirectPath::outstanding() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (auto& l : links_) {
    n += l->queued_ids.size();
    for (const Link::SentFrame& f : l->sent) n += f.ids.size();
  }
  return n;
}

}  // namespace pd3
