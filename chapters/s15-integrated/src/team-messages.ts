/**
 * Team messages (s13): what the lead and its teammates send each other through mailbox.ts,
 * and what each inbox becomes.
 *
 *   send_message      the lead to an active teammate; a teammate to lead or a teammate
 *   request_shutdown  lead ──shutdown_request──> teammate ──shutdown_response──> lead
 *   request_plan      lead ──plan_request──> teammate ──submit_plan──> lead ──review_plan──>
 *                     teammate (approved or rejected, for the assignment it was made for)
 *
 * A teammate's inbox becomes the lines of its next user message, or stops it when it accepts
 * a shutdown; the lead's inbox becomes its team events. Requests are records in protocols.ts:
 * an answer counts only when it matches a pending one.
 */
import type { Tone } from "shared";
import type { Mailbox, TeamMessage } from "./mailbox.ts";
import { Protocols } from "./protocols.ts";
import { TaskError } from "./task-record.ts";
import type { Teammate, TeamOptions } from "./team-runtime.ts";

/** The lead's mailbox name (its task owner name stays s10's `agent`). */
export const LEAD = "lead";

/** Messages and protocols between the lead and the runtime's teammates. */
export class TeamMessages {
  readonly protocols: Protocols;
  private readonly options: TeamOptions;
  private readonly teammates: Map<string, Teammate>;

  constructor(options: TeamOptions, teammates: Map<string, Teammate>) {
    this.options = options;
    this.teammates = teammates;
    this.protocols = new Protocols();
  }

  private get mail(): Mailbox {
    return this.options.mailbox;
  }

  private say(text: string, tone: Tone = "accent", scope = "main"): void {
    this.options.emit({ type: "notice", scope, text, tone });
  }

  private active(name: string): Teammate {
    const mate = this.teammates.get(name);
    if (!mate) throw new TaskError(`Teammate '${name}' is not active`);
    return mate;
  }

  /** The lines a batch of mail becomes, or null when a shutdown was accepted. */
  handleInbox(mate: Teammate, mail: TeamMessage[]): string[] | null {
    const lines: string[] = [];
    for (const message of mail) {
      const id = message.metadata.request_id;
      if (message.type === "shutdown_request") {
        const state = this.protocols.acceptShutdown(message, mate.name, mate.status === "stopping");
        if (!state) {
          lines.push("[Ignored shutdown request: request mismatch]");
          continue;
        }
        mate.status = "stopping";
        this.mail.send(mate.name, LEAD, "Shutdown acknowledged.", "shutdown_response", {
          request_id: id,
          approve: true,
        });
        return null;
      }
      if (message.type === "plan_approval_response") {
        const state = this.protocols.planResponse(message, {
          name: mate.name,
          requestId: mate.requestId,
          version: mate.version,
          taskId: mate.assignment?.taskId ?? null,
        });
        if (!state) {
          lines.push("[Ignored plan response: request mismatch]");
          continue;
        }
        mate.gate = state.status === "approved" ? "approved" : "rejected";
        mate.status = "working";
        mate.requestId = null;
        const verdict = state.status === "approved" ? "approved" : "rejected";
        lines.push(`[Plan ${verdict}] ${message.content}`);
      } else if (message.type === "plan_request") lines.push(`[Plan required] ${message.content}`);
      else lines.push(`[Message from ${message.from}] ${message.content}`);
    }
    return lines;
  }

  // --- Messages and protocols ---------------------------------------------------------

  /** send_message: the lead writes to an active teammate; a teammate to lead or a teammate. */
  message(from: string, to: string, content: string): string {
    if (from === LEAD) this.active(to);
    else if (to !== LEAD && !this.teammates.has(to))
      throw new TaskError(`Agent '${to}' is not active`);
    this.mail.send(from, to, content);
    return `Sent to ${to}`;
  }

  requestShutdown(name: string): string {
    this.active(name);
    const state = this.protocols.open({
      type: "shutdown",
      sender: LEAD,
      target: name,
      payload: "",
    });
    this.mail.send(LEAD, name, "Finish the current step and shut down.", "shutdown_request", {
      request_id: state.requestId,
    });
    return `Shutdown requested from ${name} (${state.requestId})`;
  }

  requestPlan(name: string, task: string): string {
    const mate = this.active(name);
    mate.gate = "required";
    this.mail.send(LEAD, name, task, "plan_request");
    return `Plan requested from ${name}`;
  }

  submitPlan(name: string, plan: string): string {
    const mate = this.active(name);
    if (mate.gate === "pending") return "A plan is already waiting for review.";
    const state = this.protocols.open({
      type: "plan_approval",
      sender: name,
      target: LEAD,
      payload: plan,
      workVersion: mate.version,
      taskId: mate.assignment?.taskId ?? null,
    });
    mate.gate = "pending";
    mate.status = "waiting_approval";
    mate.requestId = state.requestId;
    this.mail.send(name, LEAD, plan, "plan_approval_request", { request_id: state.requestId });
    return `Plan submitted (${state.requestId}). Wait for Lead's decision.`;
  }

  reviewPlan(requestId: string, approve: boolean, feedback?: string): string {
    const state = this.protocols.requests.get(requestId);
    if (!state) throw new TaskError(`Request ${requestId} not found`);
    if (state.type !== "plan_approval") throw new TaskError(`Request ${requestId} is not a plan`);
    if (state.status !== "pending")
      throw new TaskError(`Request ${requestId} already ${state.status}`);
    const mate = this.active(state.sender);
    if (state.workVersion !== mate.version || state.taskId !== (mate.assignment?.taskId ?? null)) {
      throw new TaskError(`Request ${requestId} belongs to an earlier assignment`);
    }
    if (mate.requestId !== requestId)
      throw new TaskError(`Request ${requestId} is not the current plan`);
    state.status = approve ? "approved" : "rejected";
    const content =
      feedback || (approve ? "Plan approved." : "Revise the plan and submit it again.");
    this.mail.send(LEAD, mate.name, content, "plan_approval_response", {
      request_id: requestId,
      approve,
    });
    return `Plan ${state.status} (${requestId})`;
  }

  /** The lead's inbox, taken whole; responses settle their requests (or are reported). */
  consumeLeadInbox(): TeamMessage[] {
    const messages = this.options.mailbox.read(LEAD);
    for (const message of messages) {
      if (!message.type.endsWith("_response") || message.metadata.request_id === undefined)
        continue;
      const problem = this.protocols.matchResponse(message);
      if (problem)
        this.say(`  [protocol] ignored ${message.type} from ${message.from}: ${problem}`, "warn");
    }
    return messages;
  }
}
