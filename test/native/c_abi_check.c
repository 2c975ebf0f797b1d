/* c_abi_check.c — every public header compiled as strict C11 (the build fails on any warning), and
 * pd3_host_create called from C: its inline wrapper passes the size of the config C sees.
 * host_config_size_test.cpp runs it. */
#include "pd3/binproto.h"
#include "pd3/host.h"
#include "pd3/parser.h"
#include "pd3/record.h"
#include "pd3/segment.h"
#include "pd3/status.h"
#include "pd3/transport.h"
#include "pd3/wire.h"

/* Creates the segment `name` from C and closes it; returns pd3_host_create's status. */
int pd3_c_create_and_close(const char* name) {
  pd3_host_config cfg = {0};
  pd3_host* h = NULL;
  cfg.name = name;
  const int rc = pd3_host_create(&cfg, &h);
  if (rc == PD3_OK) pd3_host_close(h);
  return rc;
}

/* What C takes sizeof(pd3_host_config) to be (C++ must agree). */
size_t pd3_c_config_size(void) { return sizeof(pd3_host_config); }
