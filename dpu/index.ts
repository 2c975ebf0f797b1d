// index.ts — pd3/dpu: the DPU agent's TS API: Agent runs the Transfer Engine in-process (the
// pd3-agent CLI is dpu/cli.ts); AgentSession is the agent's side of the host segment; HostView.
// The prefetcher arrives with its issue (see README).
export { AgentSession } from './agent-session.js';
export type { AgentRequest } from './agent-session.js';
export { HostView, hostViewKeyHash } from './host-view.js';
export type { HostViewOptions, HostViewInfo } from './host-view.js';
export { Agent } from './agent.js';
export { agentOptions, parseAgentCommand } from './agent-config.js';
export type { AgentOptions, AgentSettings } from './agent-config.js';
export type { Endpoint } from '../cli/endpoint.js';
export { Logger } from '../cli/logger.js';
export type { LogLevel, LogFields } from '../cli/logger.js';
export { UsageError } from '../cli/usage-error.js';
