/**
 * The bundled workflow `review-changes`: four reviewers read the same change in parallel,
 * one per dimension; every finding is then checked by an agent that tries to refute it;
 * what survives is merged into one report, most severe first.
 *
 *   changes ──> audit:correctness ──> verify each finding ─┐
 *           ──> audit:security    ──> verify each finding ─┤──> confirmed, sorted by severity
 *           ──> audit:performance ──> verify each finding ─┤
 *           ──> audit:style       ──> verify each finding ─┘
 */
import type { JsonSchema } from "shared";
import type { Primitives, WorkflowScript } from "../workflow-core.ts";

export const DIMENSIONS = ["correctness", "security", "performance", "style"] as const;
const SEVERITIES = ["high", "medium", "low"];

export const FINDINGS_SCHEMA: JsonSchema = {
  type: "object",
  required: ["findings"],
  properties: {
    findings: {
      type: "array",
      items: {
        type: "object",
        required: ["title", "severity"],
        properties: { title: { type: "string" }, severity: { enum: SEVERITIES } },
      },
    },
  },
};

export const VERDICT_SCHEMA: JsonSchema = {
  type: "object",
  required: ["isReal", "reason"],
  properties: { isReal: { type: "boolean" }, reason: { type: "string" } },
};

interface Finding {
  title: string;
  severity: string;
}

export const reviewChanges: WorkflowScript = {
  meta: {
    name: "review-changes",
    description: "Review changed files across dimensions, verify each finding",
    phases: ["Review", "Verify"],
    args: "changes: the diff or changed code as text",
  },
  async run(w: Primitives) {
    w.phase("Review");
    const changes = w.args.changes ?? "";
    if (typeof changes !== "string") throw new Error("args.changes must be a string");
    if (changes.trim() === "") return "No change context was supplied.";
    const audit = async (_previous: unknown, dimension: unknown) => {
      const report = (await w.agent(
        `Review this change context for ${dimension} issues. Report only issues that the ` +
          `supplied text supports.\n\nChange context:\n${changes}`,
        { schema: FINDINGS_SCHEMA, label: `audit:${dimension}`, phase: "Review" },
      )) as { findings: Finding[] };
      return report.findings;
    };
    const verify = async (findings: unknown, dimension: unknown) => {
      w.phase("Verify");
      const verdicts = await w.parallel(
        (findings as Finding[]).map(
          (finding) => () =>
            w.agent(
              `Adversarially verify this ${dimension} finding against the supplied change ` +
                `context: try to refute it.\n\nChange context:\n${changes}\n\nFinding:\n` +
                JSON.stringify(finding),
              { schema: VERDICT_SCHEMA, label: `verify:${dimension}:${finding.title}` },
            ) as Promise<{ isReal: boolean }>,
        ),
      );
      return (findings as Finding[])
        .filter((_, i) => verdicts[i]!.isReal)
        .map((finding) => ({ dimension, ...finding }));
    };
    const perDimension = (await w.pipeline([...DIMENSIONS], audit, verify)) as Finding[][];
    const rank = (finding: Finding) => SEVERITIES.indexOf(finding.severity);
    const confirmed = perDimension.flat().sort((a, b) => rank(a) - rank(b));
    w.log(`confirmed ${confirmed.length} real finding(s)`);
    return { confirmed };
  },
};
