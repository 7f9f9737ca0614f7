/**
 * The one input check (shared/src/schema.ts): every tool's input passes it against the
 * schema the API receives, and a workflow's structured output against the schema its call
 * gave. Each keyword it knows refuses what it should with a message that says what is wrong
 * and where; what it does not know is left alone.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { check, type FromSchema, type JsonSchema } from "../../shared/src/schema.ts";
import {
  checkInput,
  defineTool,
  type ToolDefinition,
  toolMap,
  toolSpecs,
} from "../../shared/src/tool.ts";

const problem = (schema: JsonSchema, value: unknown) => {
  const checked = check(schema, value);
  return checked.ok ? null : checked.error;
};

describe("check", () => {
  it.each([
    [{ type: "string" }, 1, "input must be a string"],
    [{ type: "integer" }, 1.5, "input must be an integer"],
    [{ type: "integer" }, "1", "input must be an integer"],
    [{ type: "number" }, "1", "input must be a number"],
    [{ type: "number" }, Number.NaN, "input must be a number"],
    [{ type: "number" }, Number.POSITIVE_INFINITY, "input must be a number"],
    [{ type: "boolean" }, "true", "input must be true or false"],
    [{ type: "array" }, { 0: "a" }, "input must be an array"],
    [{ type: "object" }, [], "input must be an object"],
    [{ type: "object" }, null, "input must be an object"],
    [{ type: "null" }, 0, "input must be null"],
    [{ type: ["string", "null"] }, 1, "input must be a string or null"],
  ] as const)("%j refuses %j: %s", (schema, value, message) => {
    expect(problem(schema, value)).toBe(message);
  });

  it.each([
    [{ type: "string" }, ""],
    [{ type: "integer" }, 3],
    [{ type: "number" }, 3],
    [{ type: "number" }, 2.5],
    [{ type: "boolean" }, false],
    [{ type: "array" }, []],
    [{ type: "object" }, {}],
    [{ type: "null" }, null],
    [{ type: ["string", "null"] }, null],
    [{}, Symbol.for("anything")],
  ] as const)("%j accepts %j", (schema, value) => {
    expect(check(schema, value)).toEqual({ ok: true, value });
  });

  it("says the type and the range of a number in one phrase when both bounds are given", () => {
    const priority = { type: "integer", minimum: 0, maximum: 10 } as const;
    for (const value of [-1, 11, 2.5, "5"])
      expect(problem(priority, value)).toBe("input must be an integer between 0 and 10");
    expect(problem(priority, 0)).toBeNull();
    expect(problem(priority, 10)).toBeNull();
    expect(problem({ type: "integer", minimum: 0 }, -1)).toBe("input must be 0 or more");
    expect(problem({ type: "number", maximum: 1 }, 1.5)).toBe("input must be 1 or less");
    expect(problem({ minimum: 1 }, 0)).toBe("input must be 1 or more");
  });

  it("checks enum, string length in characters, pattern and item counts", () => {
    expect(problem({ type: "string", enum: ["a", "b"] }, "c")).toBe("input must be one of a, b");
    expect(problem({ enum: [1, null] }, 2)).toBe("input must be one of 1, null");
    expect(problem({ type: "string", minLength: 1 }, "")).toBe("input must not be empty");
    expect(problem({ type: "string", minLength: 3 }, "ab")).toBe(
      "input must be at least 3 characters long",
    );
    // Two characters, four UTF-16 units: JSON Schema counts characters.
    expect(problem({ type: "string", maxLength: 2 }, "😀😀")).toBeNull();
    expect(problem({ type: "string", maxLength: 1 }, "😀😀")).toBe(
      "input must be at most 1 characters long",
    );
    expect(problem({ type: "string", pattern: "^task_[0-9a-f]{8}$" }, "task_1")).toBe(
      "input must match the pattern ^task_[0-9a-f]{8}$",
    );
    expect(problem({ type: "array", minItems: 1 }, [])).toBe("input must have at least 1 item");
    expect(problem({ type: "array", maxItems: 2 }, [1, 2, 3])).toBe(
      "input must have at most 2 items",
    );
  });

  it("names where a nested problem is: property paths and item indexes", () => {
    const schema = {
      type: "object",
      properties: {
        todos: {
          type: "array",
          items: {
            type: "object",
            properties: { status: { type: "string", enum: ["pending", "completed"] } },
            required: ["content"],
          },
        },
      },
    } as const;
    expect(problem(schema, { todos: [{ content: "a" }, { content: "b", status: "done" }] })).toBe(
      "todos[1].status must be one of pending, completed",
    );
    expect(problem(schema, { todos: [{}] })).toBe("todos[0].content is required");
    expect(problem({ type: "array", items: { type: "string" } }, ["a", 2])).toBe(
      "input[1] must be a string",
    );
    expect(check({ type: "number" }, "x", { root: "output" })).toEqual({
      ok: false,
      error: "output must be a number",
    });
  });

  it("refuses unknown properties only under additionalProperties: false, and says what is taken", () => {
    const strict = {
      type: "object",
      properties: { a: { type: "string" }, b: { type: "string" } },
      additionalProperties: false,
    } as const;
    expect(check(strict, { a: "x", c: 1 }, { owner: "tool_x" })).toEqual({
      ok: false,
      error: "unknown property 'c' (tool_x takes a, b)",
    });
    expect(problem(strict, { c: 1, d: 2 })).toBe("unknown properties 'c', 'd' (input takes a, b)");
    expect(problem({ type: "object", properties: {}, additionalProperties: false }, { x: 1 })).toBe(
      "unknown property 'x' (input takes no properties)",
    );
    const nested = { type: "object", properties: { inner: strict } } as const;
    expect(problem(nested, { inner: { z: 1 } })).toBe("unknown property 'z' (inner takes a, b)");
    // Without the keyword, an extra property is kept as it came.
    expect(check({ type: "object", properties: {} }, { x: 1 })).toEqual({
      ok: true,
      value: { x: 1 },
    });
  });

  it("treats an own __proto__ or constructor key as data, never as the prototype", () => {
    const strict = { type: "object", properties: {}, additionalProperties: false } as const;
    expect(problem(strict, JSON.parse('{"__proto__": {"x": 1}}'))).toBe(
      "unknown property '__proto__' (input takes no properties)",
    );
    expect(problem({ type: "object", required: ["constructor"] }, {})).toBe(
      "constructor is required",
    );
  });

  it("fills in an absent property's default, a fresh copy each time, and leaves the input alone", () => {
    const schema = {
      type: "object",
      properties: {
        recurring: { type: "boolean", default: true },
        tags: { type: "array", default: [] },
      },
      required: ["recurring"],
    } as const;
    const input = {};
    const first = check(schema, input);
    expect(first).toEqual({ ok: true, value: { recurring: true, tags: [] } });
    expect(input).toEqual({});
    const second = check(schema, {});
    expect(second.ok && first.ok && second.value.tags !== first.value.tags).toBe(true);
    expect(check(schema, { recurring: false })).toEqual({
      ok: true,
      value: { recurring: false, tags: [] },
    });
  });

  it("reads a JSON text where only an array or an object will do; any other string is refused as it came", () => {
    const list = { type: "array", items: { type: "integer" } } as const;
    expect(check(list, "[1, 2]")).toEqual({ ok: true, value: [1, 2] });
    expect(problem(list, "[1, 2")).toBe("input must be an array");
    expect(problem(list, '{"a": 1}')).toBe("input must be an array");
    expect(problem(list, '["x"]')).toBe("input[0] must be an integer");
    // A string is a string where a string is allowed.
    expect(check({ type: ["array", "string"] }, "[1]")).toEqual({ ok: true, value: "[1]" });
  });

  it("leaves keywords it does not know, and a pattern it cannot compile, to the receiver", () => {
    const foreign = {
      type: "object",
      properties: { q: { type: "string", pattern: "(?<bad" } },
      oneOf: [{ required: ["x"] }],
      patternProperties: { "^x-": {} },
      additionalProperties: false,
    } as unknown as JsonSchema;
    expect(check(foreign, { q: "anything", "x-a": 1 })).toEqual({
      ok: true,
      value: { q: "anything", "x-a": 1 },
    });
  });

  it("compares enum values as JSON, arrays and objects included", () => {
    const schema = { enum: [[1, 2], { a: 1, b: [true] }, "x"] } as const;
    expect(problem(schema, [1, 2])).toBeNull();
    expect(problem(schema, { b: [true], a: 1 })).toBeNull();
    expect(problem(schema, [2, 1])).toBe('input must be one of [1,2], {"a":1,"b":[true]}, x');
    expect(problem(schema, { a: 1 })).not.toBeNull();
    expect(problem(schema, [1, 2, 3])).not.toBeNull();
  });
});

describe("defineTool and checkInput", () => {
  const tool = defineTool({
    name: "read_page",
    aliases: [],
    description: "d",
    input_schema: {
      type: "object",
      properties: {
        path: { type: "string" },
        offset: { type: "integer", minimum: 0 },
        mode: { type: "string", enum: ["text", "bytes"], default: "text" },
      },
      required: ["path"],
      additionalProperties: false,
    },
    run: async (input) => ({ content: JSON.stringify(input) }),
  });

  it("derives run's input type from the schema", () => {
    expectTypeOf<Parameters<typeof tool.run>[0]>().toEqualTypeOf<{
      path: string;
      mode: "text" | "bytes";
      offset?: number;
    }>();
    expectTypeOf<FromSchema<{ type: "array"; items: { type: "boolean" } }>>().toEqualTypeOf<
      boolean[]
    >();
    expectTypeOf<FromSchema<{ type: readonly ["string", "null"] }>>().toEqualTypeOf<
      string | null
    >();
  });

  it("names the tool in every refusal, and hands run the checked input with its defaults", async () => {
    expect(checkInput(tool, { path: 1 })).toEqual({
      ok: false,
      error: "Error: Invalid input for read_page: path must be a string",
    });
    expect(checkInput(tool, "a.txt")).toEqual({
      ok: false,
      error: "Error: Invalid input for read_page: input must be an object",
    });
    expect(checkInput(tool, { path: "a", extra: 1 })).toEqual({
      ok: false,
      error:
        "Error: Invalid input for read_page: unknown property 'extra' (read_page takes path, offset, mode)",
    });
    const checked = checkInput(tool, { path: "a" });
    expect(checked).toEqual({ ok: true, value: { path: "a", mode: "text" } });
  });

  it("is the same object the API receives: the schema is never rewritten", () => {
    const plain: ToolDefinition = tool as ToolDefinition;
    expect(plain.input_schema).toBe(tool.input_schema);
    expect(JSON.parse(JSON.stringify(plain.input_schema)).properties.mode).toEqual({
      type: "string",
      enum: ["text", "bytes"],
      default: "text",
    });
  });
});

describe("toolSpecs", () => {
  const tool = (name: string) =>
    defineTool({
      name,
      aliases: [],
      description: `the ${name} tool`,
      input_schema: { type: "object", properties: {} },
      run: async () => ({ content: "" }),
    });

  it("gives the same frozen list for the same tools, a new one when the map's tools change", () => {
    const [a, b] = [tool("a"), tool("b")];
    const tools = toolMap([a, b]);
    const specs = toolSpecs(tools);
    expect(specs).toEqual([
      { name: "a", description: "the a tool", input_schema: { type: "object", properties: {} } },
      { name: "b", description: "the b tool", input_schema: { type: "object", properties: {} } },
    ]);
    expect(toolSpecs(tools)).toBe(specs);
    expect(Object.isFrozen(specs)).toBe(true);
    // Another map with the same tools is another list, equal to the first.
    expect(toolSpecs(toolMap([a, b]))).not.toBe(specs);
    // A map changed after the fact is read again, not served from memory.
    tools.set("c", tool("c"));
    expect(toolSpecs(tools).map((spec) => spec.name)).toEqual(["a", "b", "c"]);
    tools.set("a", tool("a"));
    expect(toolSpecs(tools)).not.toBe(specs);
  });
});
