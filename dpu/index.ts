// index.ts — pd3/dpu: the DPU agent's TS API. So far: the agent's side of the host segment.
// The Transfer Engine, Host View and prefetcher arrive with their issues (see README).
export { AgentSession } from './agent-session.js';
export type { AgentRequest } from './agent-session.js';
