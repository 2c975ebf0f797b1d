// engine_options.cpp — the checks of EngineOptions (TransferEngine::start refuses what fails them).
#include "common/error.hpp"
#include "common/tenant_credential.hpp"
#include "dpu/latency_dma.hpp"
#include "dpu/transfer_engine.hpp"
#include "pd3/status.h"
#include "pd3/transport.h"

namespace pd3 {

int validate_engine_options(const EngineOptions& o) {
  if (o.segment.empty()) return fail(PD3_E_INVAL, "segment name is empty");
  // The bound is placement's (its mask of servers tried), not the region ids' (65,536 server ids).
  if (o.servers.empty() || o.servers.size() > kMaxPlacementServers)
    return fail(PD3_E_INVAL, "%zu memory servers configured; 1 to %zu are supported", o.servers.size(), kMaxPlacementServers);
  for (const Endpoint& ep : o.servers)
    if (ep.host.empty() || ep.port == 0) return fail(PD3_E_INVAL, "memory server '%s' is not host:port", ep.str().c_str());
  if (o.token.size() > PD3_TOKEN_MAX) return fail(PD3_E_INVAL, "auth token longer than %u bytes", PD3_TOKEN_MAX);
  if (int rc = check_tenant_name("tenant", o.tenant); rc != PD3_OK) return rc;
  if (o.max_batch_records == 0 || o.max_batch_records > PD3_MAX_INFLIGHT)
    return fail(PD3_E_INVAL, "max_batch_records %u outside [1, %u]", o.max_batch_records, PD3_MAX_INFLIGHT);
  if (o.max_batch_bytes < sizeof(pd3_frame) + sizeof(pd3_request) || o.max_batch_bytes > PD3_FRAME_MAX_LIMIT)
    return fail(PD3_E_INVAL, "max_batch_bytes %u outside [%zu, %u]", o.max_batch_bytes,
                sizeof(pd3_frame) + sizeof(pd3_request), PD3_FRAME_MAX_LIMIT);
  if (o.max_outstanding == 0 || o.max_outstanding > 1024)
    return fail(PD3_E_INVAL, "max_outstanding %u outside [1, 1024]", o.max_outstanding);
  if (o.response_buffer_bytes < 4096 || o.response_buffer_bytes > PD3_FRAME_MAX_LIMIT)
    return fail(PD3_E_INVAL, "response_buffer_bytes %llu outside [4096, %u]",
                (unsigned long long)o.response_buffer_bytes, PD3_FRAME_MAX_LIMIT);
  if (o.request_timeout_ms == 0 || o.connect_timeout_ms == 0 || o.reconnect_ms == 0)
    return fail(PD3_E_INVAL, "request_timeout_ms, connect_timeout_ms and reconnect_ms must be at least 1");
  if (o.idle_sleep_us > 1000 || o.idle_sleep_max_us > 1000)
    return fail(PD3_E_INVAL, "idle sleeps above 1000 us (%u, max %u): the heartbeat must beat every millisecond",
                o.idle_sleep_us, o.idle_sleep_max_us);
  if (o.idle_sleep_max_us < o.idle_sleep_us)
    return fail(PD3_E_INVAL, "idle_sleep_max_us %u is below idle_sleep_us %u", o.idle_sleep_max_us, o.idle_sleep_us);
  if (o.batch_delay_us > 1000000 || o.idle_spin_us > 1000000)
    return fail(PD3_E_INVAL, "batch_delay_us and idle_spin_us must be at most 1000000");
  if (o.dma_latency_ns > int64_t(LatencyDma::kMaxLatencyNs))
    return fail(PD3_E_INVAL, "dma_latency_ns %lld above %llu (1 ms)", (long long)o.dma_latency_ns,
                (unsigned long long)LatencyDma::kMaxLatencyNs);
  return PD3_OK;
}

}  // namespace pd3
