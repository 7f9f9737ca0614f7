/**
 * Cron expressions (s12): our own check of every field first, so each error names its
 * field, then matching through croner, a well-kept library with classic cron semantics.
 *
 *   "0 9 * * MON-FRI"   minute hour day-of-month month day-of-week, local time
 *     validateCron  ──> 5 fields, each checked ──> "0 9 * * 1-5" (names as numbers)
 *     cronMatches   ──> croner (loaded on first use), one Cron per expression, cached
 *
 * Accepted in every field: `*`, numbers, `A-B`, comma lists, steps on `*` or on a range
 * (`*` + `/N`, `A-B/N`); month names JAN–DEC and day names SUN–SAT in any case;
 * day-of-week 0–7 (0 and 7 are Sunday). Refused: `?`, `L`, `W`, `#`, `+`, nicknames such
 * as `@daily`, and seconds or year fields. A step counts from the start of its range
 * (`*` + `/2` in day-of-month is 1, 3, 5 …); when day-of-month and day-of-week are both
 * restricted, either may match.
 */
import { onFirstUse } from "shared";

/** croner's CommonJS build, loaded when the first expression is matched. */
const croner = onFirstUse<typeof import("croner")>(import.meta.url, "croner");

interface Field {
  name: string;
  min: number;
  max: number;
  /** The largest step croner accepts in this field. */
  maxStep: number;
  /** Names for values, in order from `min` (months from 1, days from 0). */
  names?: string[];
}

export const FIELDS: Field[] = [
  { name: "minute", min: 0, max: 59, maxStep: 60 },
  { name: "hour", min: 0, max: 23, maxStep: 24 },
  { name: "day-of-month", min: 1, max: 31, maxStep: 31 },
  {
    name: "month",
    min: 1,
    max: 12,
    maxStep: 12,
    names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
  },
  {
    name: "day-of-week",
    min: 0,
    max: 7,
    maxStep: 7,
    names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
  },
];

/** An expression that is not five valid fields; the message names the field. */
export class CronSyntaxError extends Error {}

const fail = (field: Field, message: string): never => {
  throw new CronSyntaxError(`${field.name}: ${message}`);
};

/** A number or (in month and day-of-week) a name; null when it is neither. */
function readValue(text: string, field: Field): number | null {
  if (/^\d+$/.test(text)) return Number(text);
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  return index === -1 ? null : field.min + index;
}

/** One part of a comma list, in the numbers croner reads. */
function checkPart(part: string, field: Field, whole: string): string {
  if (part === "") return fail(field, `Invalid field: ${whole}`);
  const slash = part.indexOf("/");
  const base = slash === -1 ? part : part.slice(0, slash);
  let step = "";
  if (slash !== -1) {
    const raw = part.slice(slash + 1);
    const n = /^\d+$/.test(raw) ? Number(raw) : 0;
    if (n < 1 || n > field.maxStep) fail(field, `Invalid step: ${part}`);
    step = `/${n}`;
  }
  if (base === "*") return `*${step}`;
  const dash = base.indexOf("-");
  if (dash === -1) {
    // A step needs `*` or a range to count from: `5/15` is refused.
    if (step) fail(field, `Invalid step: ${part}`);
    const value = readValue(base, field);
    if (value === null) return fail(field, `Invalid field: ${part}`);
    if (value < field.min || value > field.max) {
      fail(field, `Value ${base} is outside [${field.min}-${field.max}]`);
    }
    return String(value);
  }
  const start = readValue(base.slice(0, dash), field);
  const end = readValue(base.slice(dash + 1), field);
  if (start === null || end === null) return fail(field, `Invalid range: ${part}`);
  if (start > end) fail(field, `Range start is greater than end: ${part}`);
  if (start < field.min || end > field.max) {
    fail(field, `Range ${part} is outside [${field.min}-${field.max}]`);
  }
  return `${start}-${end}${step}`;
}

/**
 * Checks `expression` field by field and returns it as croner reads it (names as numbers,
 * one space between fields). Throws a CronSyntaxError that names the field.
 */
export function validateCron(expression: string): string {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== FIELDS.length) {
    throw new CronSyntaxError(`Expected ${FIELDS.length} fields, got ${fields.length}`);
  }
  return fields
    .map((text, i) => {
      const field = FIELDS[i]!;
      return text
        .split(",")
        .map((part) => checkPart(part, field, text))
        .join(",");
    })
    .join(" ");
}

/** The error text for `expression`, or null when it is valid. */
export function cronError(expression: string): string | null {
  try {
    validateCron(expression);
    return null;
  } catch (error) {
    if (error instanceof CronSyntaxError) return error.message;
    throw error;
  }
}

/** The expression as it is stored and shown: its fields, one space apart. */
export function tidyCron(expression: string): string {
  return expression.trim().split(/\s+/).join(" ");
}

type Pattern = InstanceType<ReturnType<typeof croner>["Cron"]>;
const patterns = new Map<string, Pattern>();

/** croner's parsed pattern for a valid expression (without a callback it schedules nothing). */
function patternOf(expression: string): Pattern {
  const numeric = validateCron(expression);
  let pattern = patterns.get(numeric);
  if (!pattern) {
    // 5-part: minute resolution, no seconds or years; domAndDow false: classic OR of the days.
    pattern = new (croner().Cron)(numeric, { mode: "5-part", domAndDow: false });
    patterns.set(numeric, pattern);
  }
  return pattern;
}

/**
 * True when `expression` matches the local minute `date` falls in (seconds ignored). An
 * invalid expression (a stored job of four fields, say) matches nothing.
 */
export function cronMatches(expression: string, date: Date): boolean {
  let pattern: Pattern;
  try {
    pattern = patternOf(expression);
  } catch (error) {
    if (error instanceof CronSyntaxError) return false;
    throw error;
  }
  const minute = new Date(date.getTime());
  minute.setSeconds(0, 0);
  return pattern.match(minute);
}
