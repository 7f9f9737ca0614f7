/**
 * Agent teams (s13): the agent at the prompt becomes a lead, and teammates work beside it.
 *
 * One agent cannot hold a large job in one context, nor work on three things at once. A
 * teammate is the chapter's own loop, run concurrently in this process with its own
 * messages, prompt, tools and working directory. It never sees the lead's conversation:
 *
 *   lead ──spawn_teammate──> alice  WORK: the loop, to a reply without tool calls
 *                                   ──result, idle_notification──> lead's mailbox
 *                                   IDLE: wait for mail (every 2 s: claim a ready task)
 *                                   ──> WORK …  until a shutdown request is accepted
 *   lead's mailbox ──> one [Team events] turn of the lead (an event source of the REPL)
 *
 * Work is shared on s10's task board (one task per owner, claims under the store's lock),
 * talk goes through mailbox.ts, requests that need an answer (shutdown, plan approval)
 * through protocols.ts, and a task may carry its own checkout (worktrees.ts). A teammate
 * has the same permission and hook pipeline as the lead but no terminal: a call that
 * needs approval is denied and the lead is told. When the session ends every teammate
 * stops, and its unfinished task goes back to the board.
 *
 * This file is the mechanism. The runtime is team-runtime.ts, with team-claims.ts (claims,
 * the lease, the plan gate) and team-messages.ts (messages, requests, the inboxes); the
 * tools and the prompt sections are team-tools.ts.
 */
import { positiveIntVar, type Tone } from "shared";
import type { Mechanism, SlashCommand } from "./contract.ts";
import type { Harness } from "./harness.ts";
import { Mailbox, runName } from "./mailbox.ts";
import { formatTeamEvents } from "./protocols.ts";
import { TaskError } from "./task-record.ts";
import { TaskStore } from "./tasks-store.ts";
import { LEAD } from "./team-messages.ts";
import { IDLE_SCAN_MS, TeamRuntime } from "./team-runtime.ts";
import { leadTools, teammateSection, teammateTools, teamSection } from "./team-tools.ts";
import { Worktrees } from "./worktrees.ts";

/** The lead's inbox is also checked this often (a send in this process wakes it at once). */
export const LEAD_POLL_MS = 250;

/**
 * Teams as a mechanism: the lead's seven tools and Team section, the teammates' tools and
 * section, the lead's inbox as the REPL's "team" event source, `/team`, `/worktree
 * remove`, `/tasks release`, and every teammate stopped when the session ends.
 */
export function teamsMechanism(
  harness: Pick<
    Harness,
    "workdir" | "client" | "model" | "emit" | "usage" | "log" | "printer" | "env" | "agent"
  >,
): Mechanism {
  const say = (text: string, tone: Tone) =>
    harness.emit({ type: "notice", scope: "main", text, tone });
  const store = new TaskStore(harness.workdir, { say: (text) => say(text, "warn") });
  const mailbox = new Mailbox({ workdir: harness.workdir, run: runName(harness.log), say });
  const worktrees = new Worktrees({
    workdir: harness.workdir,
    store,
    say: (text) => say(text, "accent"),
  });
  const team = new TeamRuntime({
    workdir: harness.workdir,
    client: harness.client,
    model: harness.model,
    emit: harness.emit,
    usage: harness.usage,
    store,
    mailbox,
    worktrees,
    agent: (name) => harness.agent("teammate", name),
    idleScanMs: positiveIntVar(harness.env, "TEAM_IDLE_SCAN_MS", IDLE_SCAN_MS),
  });
  const lead = leadTools(team, worktrees);
  const mates = teammateTools(team);
  let lastRequest = "";
  let queued = false;
  let poll: NodeJS.Timeout | null = null;
  const guarded = async (work: () => Promise<string>) => {
    try {
      harness.printer.line(await work());
    } catch (error) {
      harness.printer.line(`Error: ${(error as Error).message}`, "warn");
    }
    return undefined;
  };
  const worktreeCommand: SlashCommand = {
    description:
      "remove <name> [--discard]: remove a worktree whose tasks are done (its branch stays)",
    run: (args) =>
      guarded(async () => {
        const [verb, name, flag] = args.trim().split(/\s+/);
        if (verb !== "remove" || !name || (flag !== undefined && flag !== "--discard")) {
          throw new TaskError("usage: /worktree remove <name> [--discard]");
        }
        const usedBy = (dir: string) =>
          [...team.teammates.values()].filter((m) => m.assignment?.cwd === dir).map((m) => m.name);
        return worktrees.remove(name, flag === "--discard", usedBy);
      }),
  };
  return {
    name: "teams",
    // A teammate at work or waiting for its plan's review will still report to the lead.
    busy: () =>
      [...team.teammates.values()].some(
        (mate) => mate.status === "working" || mate.status === "waiting_approval",
      ),
    tools: (role) => (role === "main" ? lead : role === "teammate" ? mates : []),
    sections: (role) =>
      role === "main" ? [teamSection()] : role === "teammate" ? [teammateSection()] : [],
    commands: {
      team: {
        description: "the teammates (role, state, plan, task, tokens) and the worktrees",
        run: async () => {
          harness.printer.line(team.describe());
          return undefined;
        },
      },
      worktree: worktreeCommand,
    },
    extendCommand: (name, command) =>
      name !== "tasks"
        ? command
        : {
            description: `${command.description}; /tasks release <task_id> puts a dead owner's task back`,
            run: (args, context) => {
              const release = /^release(?:\s+(\S+))?\s*$/.exec(args.trim());
              if (!release) return command.run(args, context);
              return guarded(async () => {
                if (!release[1]) throw new TaskError("usage: /tasks release <task_id>");
                return team.claims.release(release[1]);
              });
            },
          },
    turn: {
      beforeTurn: async (turn) => {
        if (turn.kind === "user") lastRequest = turn.request;
      },
      afterTurn: async () => {
        if (team.allDone()) harness.printer.line("[all teammates shut down]", "dim");
      },
    },
    sources: [
      {
        kind: "team",
        start: (push) => {
          const wake = () => {
            if (queued) return;
            queued = true;
            push("wake");
          };
          mailbox.onSend((message) => {
            if (message.to === LEAD) wake();
          });
          poll = setInterval(() => {
            if (mailbox.peek(LEAD)) wake();
          }, LEAD_POLL_MS);
          poll.unref();
        },
        turn: async () => {
          queued = false;
          const events = team.messages.consumeLeadInbox();
          if (events.length === 0) return null;
          harness.printer.line(`[wake: ${events.length} team event(s) -> new turn]`, "accent");
          return { kind: "team", request: lastRequest, content: formatTeamEvents(events) };
        },
      },
    ],
    close: async () => {
      if (poll) clearInterval(poll);
      await team.close();
    },
  };
}
