// The shapes of the agentd.v1 messages the extension reads, as
// @grpc/proto-loader decodes them (keepCase, longs and enums as strings,
// defaults filled in): proto/agentd/v1/agentd.proto is the contract; these
// name only the fields used here.

export interface Timestamp {
  seconds: string;
  nanos: number;
}

export interface Usage {
  input_tokens: string;
  output_tokens: string;
  cache_read_input_tokens: string;
  cache_creation_input_tokens: string;
}

export interface PlanItem {
  content: string;
  status: string;
  active_form: string;
}

export interface AgentWorktree {
  path: string;
  branch: string;
  checkout: string;
  state: string;
  owned: boolean;
}

export interface Agent {
  id: string;
  short_id: string;
  name: string;
  description: string;
  subagent_type: string;
  status: string;
  background: boolean;
  parent_id: string;
  model: string;
  cwd: string;
  created_at: Timestamp | null;
  updated_at: Timestamp | null;
  turns: number;
  usage: Usage | null;
  can_message: boolean;
  result: string;
  error: string;
  transcript_len: string;
  tool_uses: number;
  waiting_for: string;
  worktree: AgentWorktree | null;
  plan: PlanItem[];
  executor: string;
}

export interface StatusChange {
  status: string;
  result: string;
  error: string;
  turns: number;
  waiting_for: string;
}

export interface PermissionRequest {
  request_id: string;
  agent_id: string;
  tool_name: string;
  input_json: string;
  summary: string;
  resolved: boolean;
  agent_short_id: string;
  tool_use_id: string;
  remember_rules: string[];
}

export interface WatchEvent {
  agent_id: string;
  at: Timestamp | null;
  agent_short_id: string;
  event?: "created" | "status" | "notification" | "permission_request" | "plan";
  created?: Agent;
  status?: StatusChange;
  notification?: string;
  permission_request?: PermissionRequest;
  plan?: { items: PlanItem[] };
}

export interface FileChange {
  tool_use_id: string;
  path: string;
  created: boolean;
  before: string;
  after: string;
  first_line: string;
  before_cut: boolean;
  after_cut: boolean;
  before_binary: boolean;
  reported: boolean;
}

export interface TranscriptEntry {
  seq: string;
  role: string;
  content_json: Buffer;
  created_at: Timestamp | null;
  file_changes: FileChange[];
  compact_boundary: unknown;
}

export interface ToolActivity {
  tool_use_id: string;
  name: string;
  phase: string;
  summary: string;
  is_error: boolean;
}

export interface AttachEvent {
  event?:
    | "agent"
    | "entry"
    | "delta"
    | "tool"
    | "status"
    | "permission_request"
    | "retry"
    | "released"
    | "notice"
    | "plan"
    | "connection";
  agent?: Agent;
  entry?: TranscriptEntry;
  delta?: { index: number; text?: string; thinking?: string; tool_use_start?: string; input_json?: string; delta?: string };
  tool?: ToolActivity;
  status?: StatusChange;
  permission_request?: PermissionRequest;
  notice?: { text: string; is_error: boolean };
  plan?: { items: PlanItem[] };
}

export interface Cost {
  usd: number;
  without_cache_usd: number;
}

export interface AgentUsage {
  id: string;
  cost: Cost | null;
}

/** Seconds since the epoch, with fractions; 0 when unset. */
export function seconds(t: Timestamp | null | undefined): number {
  return t ? Number(t.seconds) + t.nanos / 1e9 : 0;
}
