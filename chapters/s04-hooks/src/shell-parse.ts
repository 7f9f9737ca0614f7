/**
 * Reading a shell command the way the permission gates need it: split into segments at
 * `;`, `&&`, `||`, `|`, `&`, newlines and parentheses outside quotes, each with its words
 * (quotes removed) and its redirection targets, and the command word of a segment found
 * past assignments, reserved words and wrappers (`env`, `nohup`, `xargs` …). The insides of
 * `$(…)`, `<(…)`, backticks, `sh -c '…'` and `eval …` are read as commands too.
 *
 * A heuristic that catches honest mistakes, not a shell: it never expands variables or
 * globs, so a determined model can always hide a command from it.
 */
import path from "node:path";

export interface Segment {
  /** The segment's source text (for `Bash(...)` rules). */
  text: string;
  /** Words with quotes removed. */
  words: string[];
  /** Output redirection targets (`> file`, `2>>file`, `&>file`); input (`< file`) is not one. */
  redirects: string[];
}

/** Reserved words a command word can follow: assignments are handled separately. */
const RESERVED = new Set(["!", "then", "do", "else", "elif", "if", "while", "until", "{"]);

interface Wrapper {
  /**
   * Its options that take the next word as their value (`env -u NAME`). A value that is a
   * number (`nice -n 10`, `xargs -P 4`) needs no entry: a bare number is never the command.
   */
  valued?: string[];
  /** Words it takes before the command (`timeout 5s …`: the duration). */
  positional?: number;
}

/** Commands that run the command after them. */
const WRAPPERS = new Map<string, Wrapper>([
  ["env", { valued: ["-u", "--unset", "-C", "--chdir"] }],
  ["command", {}],
  ["exec", { valued: ["-a"] }],
  ["nohup", {}],
  ["time", { valued: ["-f", "--format", "-o", "--output"] }],
  ["xargs", { valued: ["-I", "-d", "-E", "-a"] }],
  ["builtin", {}],
  ["timeout", { valued: ["-k", "--kill-after", "-s", "--signal"], positional: 1 }],
  ["nice", {}],
  ["stdbuf", { valued: ["-i", "-o", "-e"] }],
]);
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh"]);

/** The command word of a segment (after assignments, reserved words and wrappers). */
export function commandWord(segment: Segment): { word: string; args: string[] } | null {
  const words = segment.words;
  let i = 0;
  for (;;) {
    const word = words[i];
    if (word === undefined) return null;
    const wrapper = WRAPPERS.get(word);
    if (RESERVED.has(word) || /^[A-Za-z_]\w*=/.test(word)) i++;
    else if (wrapper) i = pastWrapper(words, i + 1, wrapper);
    else break;
  }
  const word = words[i]!;
  const pathLike = word.startsWith("/") || word.startsWith(".") || word.startsWith("~");
  return { word: pathLike ? path.basename(word) : word, args: words.slice(i + 1) };
}

/** The index of the first word after a wrapper's own options and arguments. */
function pastWrapper(words: string[], from: number, wrapper: Wrapper): number {
  let i = from;
  let positional = wrapper.positional ?? 0;
  for (let next = words[i]; next !== undefined; next = words[i]) {
    // An option (`--` too: `timeout -- 5 rm` still takes its duration), with its value.
    if (next.startsWith("-")) i += wrapper.valued?.includes(next) ? 1 : 0;
    else if (positional > 0)
      positional--; // a wrapper's own argument (`timeout 5s`)
    else if (!/^\d+$/.test(next)) return i; // a bare number: an option's value
    i++;
  }
  return i;
}

/**
 * Splits a command into segments at `;`, `&&`, `||`, `|`, `&`, newlines and parentheses
 * outside quotes. The insides of `$(…)`, `<(…)`, `>(…)` and backticks, and the script given to
 * `sh -c`/`bash -c`/`eval`, are read as commands too and added as more segments.
 */
export function parseCommand(command: string, depth = 0): Segment[] {
  const segments: Segment[] = [];
  const nested: string[] = [];
  let words: string[] = [];
  let redirects: string[] = [];
  let word = "";
  let inWord = false;
  let start = 0;
  // The next word is the target of an output (`>`) or input (`<`) redirection.
  let pendingRedirect: ">" | "<" | null = null;

  const endWord = () => {
    if (!inWord) return;
    if (pendingRedirect === ">") redirects.push(word);
    else if (pendingRedirect === null) words.push(word);
    pendingRedirect = null;
    word = "";
    inWord = false;
  };
  const endSegment = (end: number) => {
    endWord();
    const text = command.slice(start, end).trim();
    if (words.length > 0 || redirects.length > 0) segments.push({ text, words, redirects });
    words = [];
    redirects = [];
    pendingRedirect = null; // a redirection never reaches past a separator
  };

  let i = 0;
  while (i < command.length) {
    const c = command[i]!;
    if (c === "\\" && i + 1 < command.length) {
      if (command[i + 1] !== "\n") word += command[i + 1];
      inWord = true;
      i += 2;
    } else if (c === "'") {
      const close = command.indexOf("'", i + 1);
      const end = close === -1 ? command.length : close;
      word += command.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i = readDoubleQuoted(
        command,
        i + 1,
        (text) => {
          word += text;
        },
        nested,
      );
      inWord = true;
    } else if ("$<>".includes(c) && command[i + 1] === "(") {
      // `$(…)`, and the process substitutions `<(…)` and `>(…)`: a command inside a word.
      const end = matchParen(command, i + 1);
      nested.push(command.slice(i + 2, end));
      word += command.slice(i, end + 1);
      inWord = true;
      i = end + 1;
    } else if (c === "`") {
      const close = command.indexOf("`", i + 1);
      const end = close === -1 ? command.length : close;
      nested.push(command.slice(i + 1, end));
      word += command.slice(i, end + 1);
      inWord = true;
      i = end + 1;
    } else if (c === "#" && !inWord) {
      const newline = command.indexOf("\n", i);
      i = newline === -1 ? command.length : newline;
    } else if (c === ">" || c === "<") {
      // `2>`, `&>`, `>>`, `>|`, `>&2`: a redirection; its target is the next word.
      if (inWord && /^\d+$/.test(word)) {
        word = "";
        inWord = false;
      } else endWord();
      i++;
      // `>>` reads as a second `>` next time round; `>|` writes all the same.
      if (command[i] === "|") i++;
      if (command[i] === "&") {
        i++;
        while (/[\d-]/.test(command[i] ?? "")) i++; // `>&2`, `>&-`: a descriptor, not a file
        continue;
      }
      pendingRedirect = c;
    } else if (c === "&" && command[i + 1] === ">") {
      endWord();
      i += 2; // `&>>`: the second `>` reads as one more `>`
      pendingRedirect = ">";
    } else if (";&|\n()".includes(c)) {
      // `&&` and `||` split twice: the empty segment between is dropped.
      endSegment(i);
      i++;
      start = i;
    } else if (c === " " || c === "\t") {
      endWord();
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  endSegment(command.length);

  if (depth < 8) {
    for (const segment of [...segments]) nested.push(...scriptsIn(segment));
    for (const inner of nested) segments.push(...parseCommand(inner, depth + 1));
  }
  return segments;
}

/** The script of `sh -c 'script'`, `bash -c …` or `eval …`, read as a command too. */
function scriptsIn(segment: Segment): string[] {
  const found = commandWord(segment);
  if (!found) return [];
  if (found.word === "eval") return [found.args.join(" ")];
  if (!SHELLS.has(found.word)) return [];
  const flag = found.args.findIndex((arg) => /^-[a-z]*c[a-z]*$/.test(arg));
  if (flag === -1) return [];
  // `bash -c -- 'script'`: the `--` only ends the shell's options.
  const at = found.args[flag + 1] === "--" ? flag + 2 : flag + 1;
  const script = found.args[at];
  return script === undefined ? [] : [script];
}

/** Reads a double-quoted string from `i` (after the quote); returns the index after it. */
function readDoubleQuoted(
  command: string,
  i: number,
  add: (text: string) => void,
  nested: string[],
): number {
  while (i < command.length && command[i] !== '"') {
    const c = command[i]!;
    if (c === "\\" && i + 1 < command.length) {
      add(command[i + 1]!);
      i += 2;
    } else if (c === "$" && command[i + 1] === "(") {
      const end = matchParen(command, i + 1);
      nested.push(command.slice(i + 2, end));
      add(command.slice(i, end + 1));
      i = end + 1;
    } else if (c === "`") {
      const close = command.indexOf("`", i + 1);
      const end = close === -1 ? command.length : close;
      nested.push(command.slice(i + 1, end));
      add(command.slice(i, end + 1));
      i = end + 1;
    } else {
      add(c);
      i++;
    }
  }
  return i + 1;
}

/** The index of the `)` that closes the `(` at `open`, skipping quotes (end of text if none). */
function matchParen(command: string, open: number): number {
  let depth = 0;
  for (let i = open; i < command.length; i++) {
    const c = command[i];
    if (c === "'") {
      const close = command.indexOf("'", i + 1);
      i = close === -1 ? command.length : close;
    } else if (c === '"') {
      // A `)` inside double quotes closes nothing: skip to the closing quote.
      i++;
      while (i < command.length && command[i] !== '"') i += command[i] === "\\" ? 2 : 1;
    } else if (c === "\\") i++;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return command.length;
}
