/**
 * Protocols (s13): requests that need an answer, matched by `request_id`.
 *
 *   shutdown       lead ──shutdown_request──> teammate ──shutdown_response──> lead
 *   plan approval  teammate ──plan_approval_request──> lead ──plan_approval_response──> teammate
 *
 * A request is a record here (who asked whom, its status, and for a plan the assignment it
 * was made for); a response counts only when it names a pending request, comes from the
 * one asked and goes to the one who asked. Anything else (a stale ID, a forged or replayed
 * reply, a plan answer for an earlier assignment) is ignored and said so: a message in a
 * mailbox is only text, and the records decide what it means.
 */
import { randomInt } from "node:crypto";
import type { TeamMessage } from "./mailbox.ts";

export type ProtocolType = "shutdown" | "plan_approval";
export type ProtocolStatus = "pending" | "approved" | "rejected";

export interface ProtocolState {
  requestId: string;
  type: ProtocolType;
  sender: string;
  target: string;
  status: ProtocolStatus;
  payload: string;
  /** For a plan: the teammate's work version and task when it asked. */
  workVersion?: number;
  taskId?: string | null;
  createdAt: number;
}

/** Which response type answers which request type. */
const RESPONSE_OF: Record<ProtocolType, string> = {
  shutdown: "shutdown_response",
  plan_approval: "plan_approval_response",
};

export class Protocols {
  /** Every request of this run (never cleared: a lesson-sized session keeps few). */
  readonly requests = new Map<string, ProtocolState>();
  private readonly random: () => number;

  constructor(random: () => number = () => randomInt(1_000_000)) {
    this.random = random;
  }

  /** A new request, with an ID `req_` + 6 digits not used before in this run. */
  open(request: Omit<ProtocolState, "requestId" | "status" | "createdAt">): ProtocolState {
    let requestId: string;
    do requestId = `req_${String(this.random()).padStart(6, "0")}`;
    while (this.requests.has(requestId));
    const state: ProtocolState = {
      ...request,
      requestId,
      status: "pending",
      createdAt: Date.now(),
    };
    this.requests.set(requestId, state);
    return state;
  }

  /**
   * The lead's side of a response: null when it settled its request, else why it was
   * ignored (unknown ID, wrong type, wrong responder or recipient, already settled).
   */
  matchResponse(message: TeamMessage): string | null {
    const id = message.metadata.request_id;
    const state = typeof id === "string" ? this.requests.get(id) : undefined;
    if (!state) return `unknown request ${String(id)}`;
    if (RESPONSE_OF[state.type] !== message.type) return `${message.type} does not answer ${id}`;
    if (message.from !== state.target || message.to !== state.sender) {
      return `${id} was not sent by ${message.from} to ${message.to}`;
    }
    if (state.status !== "pending") return `${id} is already ${state.status}`;
    state.status = message.metadata.approve === false ? "rejected" : "approved";
    return null;
  }

  /** A teammate accepts a shutdown request only if it is pending, from lead, to itself. */
  acceptShutdown(message: TeamMessage, self: string, stopping: boolean): ProtocolState | null {
    const id = message.metadata.request_id;
    const state = typeof id === "string" ? this.requests.get(id) : undefined;
    const valid =
      state !== undefined &&
      message.from === "lead" &&
      message.to === self &&
      state.type === "shutdown" &&
      state.sender === "lead" &&
      state.target === self &&
      state.status === "pending" &&
      !stopping;
    return valid ? state : null;
  }

  /**
   * A teammate applies a plan response only if it answers its current request, for the
   * assignment it is still on, and says what the request's record says.
   */
  planResponse(
    message: TeamMessage,
    self: { name: string; requestId: string | null; version: number; taskId: string | null },
  ): ProtocolState | null {
    const id = message.metadata.request_id;
    const state = typeof id === "string" ? this.requests.get(id) : undefined;
    if (!state || message.from !== "lead" || message.to !== self.name) return null;
    if (id !== self.requestId || state.type !== "plan_approval") return null;
    if (state.sender !== self.name || state.target !== "lead") return null;
    if (state.workVersion !== self.version || state.taskId !== self.taskId) return null;
    if (state.status === "pending") return null;
    if ((message.metadata.approve === true) !== (state.status === "approved")) return null;
    return state;
  }
}

/** The first user message of a team-event turn: one line per event, in arrival order. */
export function formatTeamEvents(messages: TeamMessage[]): string {
  const lines = messages.map((message) => {
    const id = message.metadata.request_id;
    const tag = typeof id === "string" ? `${message.type} request_id=${id}` : message.type;
    return `[${tag}] ${message.from}: ${message.content}`;
  });
  return ["[Team events]", ...lines].join("\n");
}
