/**
 * s13.2: a shutdown request the teammate answers, and may reject. Run it with
 * `pnpm course exercise check s13.2`.
 */
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
type Answer = ReturnType<typeof reply>;

/** The lead's requests offer spawn_teammate; alice's prompt ends with her name. */
const isLead = (r: Request) => toolNames(r).includes("spawn_teammate");
const isAlice = (r: Request) =>
  !isLead(r) && JSON.stringify(r.system ?? "").includes("You are 'alice'");

/** The request ID of the shutdown request alice was handed, if she was. */
const SHUTDOWN_LINE = /\[Shutdown request request_id=(req_\d{6})\] ([^"\\]*)/;
const shutdownIn = (r: Request) => SHUTDOWN_LINE.exec(JSON.stringify(r.messages));

/**
 * One typed line: the lead spawns alice, asks her to shut down, waits two seconds for her
 * answer, lists the teammates and ends. alice answers with `alice(request, id)`, where id is
 * the shutdown request's ID once she has been handed it (else "ready").
 */
async function shutdownSession(
  alice: (r: Request, id: string) => Answer = () => reply(text("ready")),
): Promise<RunOutcome> {
  const lead: Array<[string, Record<string, unknown>]> = [
    ["spawn_teammate", { name: "alice", role: "tester", prompt: "Write the tests." }],
    ["request_shutdown", { teammate: "alice" }],
    ["bash", { command: "sleep 2" }],
    ["list_teammates", {}],
  ];
  return runExercise({
    prompts: ["wrap up the team"],
    steps: [
      ...lead.map(([name, input], i) => ({
        when: (r: Request) => isLead(r) && (i === 0 ? !afterTools(r) : afterTools(r)),
        reply: reply(toolUse(name, input)),
      })),
      { when: isLead, reply: reply(text("done")) },
      {
        when: isAlice,
        repeat: true,
        reply: (r: Request) => {
          const id = shutdownIn(r)?.[1];
          return id ? alice(r, id) : reply(text("ready"));
        },
      },
    ],
  });
}

/** The lead's `n`th tool call's result (0-based). */
const leadResult = (run: RunOutcome, n: number) =>
  String(lastToolResults(run.requests.filter(isLead)[n + 1]!)[0]!.content);
/** The ID request_shutdown answered with. */
const requested = (run: RunOutcome) => /\((req_\d{6})\)$/.exec(leadResult(run, 1))?.[1];
/** alice's requests, in order. */
const aliceRequests = (run: RunOutcome) => run.requests.filter(isAlice);
/** The results alice got back, in order. */
const aliceResults = (run: RunOutcome) =>
  aliceRequests(run).flatMap((r) => lastToolResults(r).map((b) => String(b.content)));

it("offers a teammate respond_shutdown, which takes a request_id, approve and a reason", async () => {
  const run = await shutdownSession();
  const tool = (
    aliceRequests(run)[0]!.tools as Array<{
      name: string;
      input_schema: { properties: object; required?: string[] };
    }>
  ).find((t) => t.name === "respond_shutdown");
  expect(tool).toBeDefined();
  expect(Object.keys(tool!.input_schema.properties).sort()).toEqual([
    "approve",
    "reason",
    "request_id",
  ]);
  expect([...(tool!.input_schema.required ?? [])].sort()).toEqual(["approve", "request_id"]);
});

it("hands the shutdown request to the teammate as a line, and it keeps working until it answers", async () => {
  const run = await shutdownSession();
  const handed = shutdownIn(aliceRequests(run).at(-1)!);
  expect(handed?.slice(1)).toEqual([requested(run), "Finish the current step and shut down."]);
  expect(run.output).not.toContain("(shutdown_response)");
  expect(leadResult(run, 3)).toMatch(/^alice: (idle|working)$/);
});

it("approving stops the teammate before its next model call and tells the lead", async () => {
  const run = await shutdownSession((_r, id) =>
    reply(toolUse("respond_shutdown", { request_id: id, approve: true })),
  );
  expect(shutdownIn(aliceRequests(run).at(-1)!)?.[1]).toBe(requested(run));
  expect(aliceResults(run)).toEqual([]);
  expect(run.output).toContain("[bus] alice -> lead: (shutdown_response) Shutdown acknowledged.");
  expect(leadResult(run, 3)).toBe("No active teammates.");
});

it("rejecting with a reason keeps the teammate and tells the lead why", async () => {
  const run = await shutdownSession((r, id) =>
    afterTools(r)
      ? reply(text("Still on the tests."))
      : reply(
          toolUse("respond_shutdown", {
            request_id: id,
            approve: false,
            reason: "I am halfway through the tests.",
          }),
        ),
  );
  expect(aliceResults(run)).toEqual([`Shutdown rejected (${requested(run)})`]);
  expect(run.output).toContain(
    "[bus] alice -> lead: (shutdown_response) Rejected: I am halfway through the tests.",
  );
  expect(leadResult(run, 3)).toMatch(/^alice: (idle|working)$/);
});

it("refuses an answer to a request that is not open, and a rejection without a reason", async () => {
  const run = await shutdownSession((r, id) => {
    const answered = answersSoFar(r);
    if (answered === 0)
      return reply(toolUse("respond_shutdown", { request_id: "req_000000", approve: true }));
    if (answered === 1)
      return reply(toolUse("respond_shutdown", { request_id: id, approve: false, reason: " " }));
    return reply(text("Still on the tests."));
  });
  expect(aliceResults(run)).toEqual([
    "Error: req_000000 is not a pending shutdown request for alice",
    "Error: Give a reason to reject a shutdown request",
  ]);
  expect(run.output).not.toContain("(shutdown_response)");
  expect(leadResult(run, 3)).toMatch(/^alice: (idle|working)$/);
});

/** How many rounds of tool results a teammate's history holds (its answers so far). */
function answersSoFar(r: Request): number {
  return r.messages.filter(
    (m) =>
      m.role === "user" &&
      Array.isArray(m.content) &&
      m.content.some((block) => block.type === "tool_result"),
  ).length;
}
