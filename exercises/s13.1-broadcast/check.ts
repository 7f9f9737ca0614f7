/**
 * s13.1: a message to every teammate at once. Run it with `pnpm course exercise check s13.1`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import {
  afterTools,
  expect,
  it,
  lastToolResults,
  type RunOutcome,
  reply,
  runExercise,
  text,
  toolNames,
  toolUse,
} from "../../tests/helpers/exercise.ts";

type Request = RunOutcome["requests"][number];
type Call = [string, Record<string, unknown>];

/** The lead's requests offer spawn_teammate; a teammate's prompt ends with its name. */
const isLead = (r: Request) => toolNames(r).includes("spawn_teammate");
const isMate = (name: string) => (r: Request) =>
  !isLead(r) && JSON.stringify(r.system ?? "").includes(`You are '${name}'`);

const spawn = (name: string): Call => [
  "spawn_teammate",
  { name, role: "writer", prompt: "Wait for instructions." },
];
/** Two seconds for the teammates to read their mail while the lead's turn still runs. */
const WAIT: Call = ["bash", { command: "sleep 2" }];

/**
 * One typed line: the lead makes `lead` calls in turn (one per reply), then ends. Each
 * teammate answers with its own script's reply, or "ready" when it has none.
 */
async function team(
  lead: Call[],
  mates: Record<string, (r: Request) => ReturnType<typeof reply>> = {},
): Promise<RunOutcome> {
  return runExercise({
    prompts: ["run the team"],
    steps: [
      ...lead.map(([name, input], i) => ({
        when: (r: Request) => isLead(r) && (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: isLead, reply: reply(text("done")) },
      {
        when: (r: Request) => !isLead(r),
        repeat: true,
        reply: (r: Request) => {
          const mine = Object.keys(mates).find((name) => isMate(name)(r));
          return mine ? mates[mine]!(r) : reply(text("ready"));
        },
      },
    ],
  });
}

/** The result of the lead's `n`th tool call (0-based). */
function leadResult(run: RunOutcome, n: number): { content: string; isError: boolean } {
  const block = lastToolResults(run.requests.filter(isLead)[n + 1]!)[0]!;
  return { content: String(block.content), isError: block.is_error === true };
}

/** How often `line` occurs in the last request of teammate `name`. */
function seenBy(run: RunOutcome, name: string, line: string): number {
  const last = run.requests.filter(isMate(name)).at(-1);
  return last ? JSON.stringify(last.messages).split(line).length - 1 : 0;
}

it('tells the model that send_message takes "*" as a recipient', async () => {
  const run = await team([]);
  const tool = (
    run.requests[0]!.tools as Array<{
      name: string;
      input_schema: { properties: Record<string, { description?: string }> };
    }>
  ).find((t) => t.name === "send_message")!;
  expect(tool.input_schema.properties.to?.description ?? "").toContain('"*"');
});

it("sends the lead's message to every active teammate once, in name order", async () => {
  const run = await team([
    spawn("bob"),
    spawn("alice"),
    ["send_message", { to: "*", content: "Stand-up at 10." }],
    WAIT,
  ]);
  expect(leadResult(run, 2)).toEqual({ content: "Sent to alice, bob", isError: false });
  expect(run.output).toContain("[bus] lead -> alice: (message) Stand-up at 10.");
  expect(run.output).toContain("[bus] lead -> bob: (message) Stand-up at 10.");
  expect(seenBy(run, "alice", "[Message from lead] Stand-up at 10.")).toBe(1);
  expect(seenBy(run, "bob", "[Message from lead] Stand-up at 10.")).toBe(1);
});

it("refuses a message to everyone when nobody is on the team, and sends nothing", async () => {
  const run = await team([["send_message", { to: "*", content: "Anyone?" }]]);
  expect(leadResult(run, 0)).toEqual({
    content: "Error: No other active teammates",
    isError: true,
  });
  expect(existsSync(path.join(run.workdir, ".harness", "mailboxes"))).toBe(false);
});

it("lets a teammate write to every other teammate, not to itself or the lead", async () => {
  const run = await team([spawn("bob"), spawn("alice"), WAIT], {
    alice: (r) =>
      afterTools(r)
        ? reply(text("told them"))
        : reply(toolUse("send_message", { to: "*", content: "I take the API." })),
  });
  const alice = run.requests.filter(isMate("alice"));
  const sent = lastToolResults(alice[1]!)[0]!;
  expect({ content: String(sent.content), isError: sent.is_error === true }).toEqual({
    content: "Sent to bob",
    isError: false,
  });
  expect(run.output).toContain("[bus] alice -> bob: (message) I take the API.");
  expect(run.output).not.toContain("alice -> lead: (message)");
  expect(run.output).not.toContain("alice -> alice");
  expect(seenBy(run, "bob", "[Message from alice] I take the API.")).toBe(1);
});

it("still sends to one teammate by name, and refuses a name that is not on the team", async () => {
  const run = await team([
    spawn("alice"),
    ["send_message", { to: "alice", content: "Only you." }],
    ["send_message", { to: "zed", content: "Hello?" }],
    WAIT,
  ]);
  expect(leadResult(run, 1)).toEqual({ content: "Sent to alice", isError: false });
  expect(leadResult(run, 2)).toEqual({
    content: "Error: Teammate 'zed' is not active",
    isError: true,
  });
  expect(seenBy(run, "alice", "[Message from lead] Only you.")).toBe(1);
});
