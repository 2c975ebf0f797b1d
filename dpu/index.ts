// index.ts — pd3/dpu: the DPU agent's TS API: the agent's side of the host segment, and Host View.
// The Transfer Engine and the prefetcher arrive with their issues (see README).
export { AgentSession } from './agent-session.js';
export type { AgentRequest } from './agent-session.js';
export { HostView, hostViewKeyHash } from './host-view.js';
export type { HostViewOptions, HostViewInfo } from './host-view.js';
