// index.ts — the page server example: start it in-process, drive it with the load client, and the
// pieces both share (page content, keys, the gRPC service).
export { startPageServer } from './page-server.js';
export type { PageServer } from './page-server.js';
export { MODES, MAX_PAGES, MAX_GET_PAGES, PageServerOptionError, resolveOptions } from './options.js';
export type { PageServerMode, PageServerOptions } from './options.js';
export { PAGE_SIZE, pageContent, pageStamp } from './page-content.js';
export type { PageStamp } from './page-content.js';
export { pageKey, SLOT_BYTES } from './page-record.js';
export { PAGES_PROTO, PAGES_PARSER_CONFIG, PAGES_SERVICE, pagesMethods } from './pages-service.js';
export type { PagesMethod, WireMessage } from './pages-service.js';
export { PagesClient } from './pages-client.js';
export type { PageServerCounters } from './stats.js';
export { LOAD_WORKLOADS, runLoad } from './load-run.js';
export { VerifyModel } from './verify-model.js';
export type { LoadOptions, LoadReport } from './load-run.js';
