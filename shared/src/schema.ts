/**
 * A tool's input, declared once. The `input_schema` a tool declares is the JSON Schema the
 * API receives; the loop checks every call's input against that same object (`checkInput`),
 * and `defineTool` derives the input's TypeScript type from it. The schema the model reads,
 * the check its input passes and the type `run` receives are one declaration, so they cannot
 * drift apart. See docs/architecture.md, "Tools".
 *
 * The check knows the keywords the course's tools use: `type` (one or a list), `properties`,
 * `required`, `additionalProperties: false`, `items`, `enum`, `minimum`, `maximum`,
 * `minLength`, `maxLength`, `pattern`, `minItems`, `maxItems`, and `default` (filled in when
 * the property is absent). A keyword it does not know (an MCP server's `oneOf` or `$ref`) is
 * left to whoever receives the input. One leniency holds for every tool: a string where the
 * schema wants an array or an object is read as JSON (models sometimes send a list that way).
 */
import type { Parsed } from "./tool.ts";

export type SchemaType = "object" | "array" | "string" | "integer" | "number" | "boolean" | "null";

/** The JSON Schema keywords the check knows (a schema from elsewhere may hold others). */
export interface JsonSchema {
  readonly type?: SchemaType | readonly SchemaType[];
  readonly description?: string;
  readonly properties?: { readonly [name: string]: JsonSchema };
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean;
  readonly items?: JsonSchema;
  readonly enum?: readonly unknown[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly default?: unknown;
}

/** A tool's input: always an object. */
export interface ObjectSchema extends JsonSchema {
  readonly type: "object";
}

// ---------------------------------------------------------------------------------------
// The type a schema describes

type TypeName<T> = T extends "string"
  ? string
  : T extends "integer" | "number"
    ? number
    : T extends "boolean"
      ? boolean
      : T extends "null"
        ? null
        : T extends "array"
          ? unknown[]
          : T extends "object"
            ? Record<string, unknown>
            : unknown;

type RequiredOf<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

/** The properties a checked value always has: the required ones and those with a default. */
type Present<P, R> = {
  [K in keyof P]: K extends R ? K : P[K] extends { readonly default: unknown } ? K : never;
}[keyof P];

type Flat<T> = { [K in keyof T]: T[K] } & {};

type ObjectOf<P, R> = Flat<
  { -readonly [K in Present<P, R>]: FromSchema<P[K]> } & {
    -readonly [K in Exclude<keyof P, Present<P, R>>]?: FromSchema<P[K]>;
  }
>;

/** The TypeScript type of a value that passed `check(schema, …)`. */
export type FromSchema<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly type: "object"; readonly properties: infer P }
    ? ObjectOf<P, RequiredOf<S>>
    : S extends { readonly type: "array"; readonly items: infer I }
      ? FromSchema<I>[]
      : S extends { readonly type: readonly (infer T)[] }
        ? TypeName<T>
        : S extends { readonly type: infer T }
          ? TypeName<T>
          : unknown;

// ---------------------------------------------------------------------------------------
// The check

const TYPE_NAMES: Record<SchemaType, string> = {
  object: "an object",
  array: "an array",
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  null: "null",
};

function typeOf(value: unknown): SchemaType | "other" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string" || typeof value === "boolean" || typeof value === "object")
    return typeof value as SchemaType;
  return "other";
}

function fits(value: unknown, type: SchemaType): boolean {
  const actual = typeOf(value);
  if (type === "number") return actual === "number" || actual === "integer";
  return actual === type;
}

function listed(values: readonly unknown[]): string {
  return values
    .map((value) => (typeof value === "string" ? value : JSON.stringify(value)))
    .join(", ");
}

/** How a message names the whole value (`input`) and who takes its properties (a tool). */
interface Names {
  root: string;
  owner: string;
}

/** `todos[0].status`; the root's name for an item of the whole value. */
function join(names: Names, path: string, key: string | number): string {
  if (typeof key === "number") return `${path || names.root}[${key}]`;
  return path ? `${path}.${key}` : key;
}

class Invalid extends Error {}

/** JSON equality, as `enum` compares: `[1, 2]` is `[1, 2]`, `{a, b}` is `{b, a}`. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every(
    (key) =>
      Object.hasOwn(b, key) &&
      sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

const patterns = new Map<string, RegExp | null>();

/** A schema's `pattern` as a RegExp; null when it does not compile here (left unchecked). */
function compiled(pattern: string): RegExp | null {
  let regexp = patterns.get(pattern);
  if (regexp === undefined) {
    try {
      regexp = new RegExp(pattern, "u");
    } catch {
      regexp = null;
    }
    patterns.set(pattern, regexp);
  }
  return regexp;
}

/** "must be an integer between 0 and 10" and the like: type and range in one phrase. */
function numberProblem(schema: JsonSchema, kind: "integer" | "number", value: unknown) {
  const { minimum: min, maximum: max } = schema;
  const name = TYPE_NAMES[kind];
  const wrongType = !fits(value, kind) || !Number.isFinite(value);
  if (min !== undefined && max !== undefined) {
    const outside = !wrongType && ((value as number) < min || (value as number) > max);
    return wrongType || outside ? `must be ${name} between ${min} and ${max}` : null;
  }
  if (wrongType) return `must be ${name}`;
  if (min !== undefined && (value as number) < min) return `must be ${min} or more`;
  if (max !== undefined && (value as number) > max) return `must be ${max} or less`;
  return null;
}

function checkValue(schema: JsonSchema, input: unknown, path: string, names: Names): unknown {
  const fail = (problem: string): never => {
    throw new Invalid(`${path || names.root} ${problem}`);
  };
  const types = schema.type === undefined ? [] : ([] as SchemaType[]).concat(schema.type);
  let value = input;
  // The one leniency: a JSON text where only an array or an object will do.
  if (
    typeof value === "string" &&
    types.length > 0 &&
    types.every((type) => type === "array" || type === "object")
  ) {
    try {
      value = JSON.parse(value);
    } catch {
      // Not JSON: the type check below refuses the string as it came.
    }
  }
  const numeric = types.find((type) => type === "integer" || type === "number");
  if (types.length === 1 && numeric) {
    const problem = numberProblem(schema, numeric, value);
    if (problem) fail(problem);
  } else if (types.length > 0 && !types.some((type) => fits(value, type))) {
    fail(`must be ${types.map((type) => TYPE_NAMES[type]).join(" or ")}`);
  } else if (typeof value === "number") {
    const problem = numberProblem(schema, "number", value);
    if (problem) fail(problem);
  }
  if (schema.enum && !schema.enum.some((option) => sameJson(option, value))) {
    fail(`must be one of ${listed(schema.enum)}`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) {
      fail(
        schema.minLength === 1
          ? "must not be empty"
          : `must be at least ${schema.minLength} characters long`,
      );
    }
    if (schema.maxLength !== undefined && length > schema.maxLength) {
      fail(`must be at most ${schema.maxLength} characters long`);
    }
    if (schema.pattern !== undefined && compiled(schema.pattern)?.test(value) === false) {
      fail(`must match the pattern ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    const items = (count: number) => `${count} item${count === 1 ? "" : "s"}`;
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      fail(`must have at least ${items(schema.minItems)}`);
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      fail(`must have at most ${items(schema.maxItems)}`);
    }
    const itemSchema = schema.items;
    if (itemSchema)
      return value.map((item, index) =>
        checkValue(itemSchema, item, join(names, path, index), names),
      );
    return value;
  }
  if (
    typeOf(value) === "object" &&
    (schema.properties || schema.required || schema.additionalProperties === false)
  ) {
    return checkObject(schema, value as Record<string, unknown>, path, names);
  }
  return value;
}

function checkObject(
  schema: JsonSchema,
  object: Record<string, unknown>,
  path: string,
  names: Names,
): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const known = Object.keys(properties);
  // With `patternProperties` (a keyword the check does not know) other names may be allowed.
  if (schema.additionalProperties === false && !("patternProperties" in schema)) {
    const unknown = Object.keys(object).filter((key) => !Object.hasOwn(properties, key));
    if (unknown.length > 0) {
      const who = `${path || names.owner} takes`;
      const takes = known.length > 0 ? `${who} ${known.join(", ")}` : `${who} no properties`;
      const listed = unknown.map((key) => `'${key}'`).join(", ");
      throw new Invalid(
        `unknown propert${unknown.length === 1 ? "y" : "ies"} ${listed} (${takes})`,
      );
    }
  }
  // Own keys only: `constructor` is not given because every object inherits one.
  const given = (key: string) => Object.hasOwn(object, key) && object[key] !== undefined;
  for (const key of schema.required ?? []) {
    if (!given(key) && properties[key]?.default === undefined) {
      throw new Invalid(`${join(names, path, key)} is required`);
    }
  }
  const out: Record<string, unknown> = { ...object };
  for (const key of known) {
    const inner = properties[key]!;
    if (!given(key)) {
      if (inner.default !== undefined) out[key] = structuredClone(inner.default);
      continue;
    }
    out[key] = checkValue(inner, object[key], join(names, path, key), names);
  }
  return out;
}

/**
 * `value` checked against `schema`: the value with every absent default filled in, or the
 * first problem, named by where it is (`todos[0].status must be one of …`). `root` names the
 * whole value in a message (`input must be an object`), `owner` whoever takes its properties
 * (`unknown property 'x' (create_task takes …)`).
 */
export function check<S extends JsonSchema>(
  schema: S,
  value: unknown,
  { root = "input", owner = root }: Partial<Names> = {},
): Parsed<FromSchema<S>> {
  try {
    const names = { root, owner };
    return { ok: true, value: checkValue(schema, value, "", names) as FromSchema<S> };
  } catch (error) {
    if (error instanceof Invalid) return { ok: false, error: error.message };
    throw error;
  }
}
