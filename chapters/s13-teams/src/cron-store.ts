/**
 * The cron jobs' store (s12): every job of the session in memory, the durable ones also in
 * `<WORKDIR>/.harness/cron.json`. The scheduler over it is cron-scheduler.ts.
 *
 *   .harness/cron.json   a pretty JSON array of durable jobs, upstream's snake_case keys:
 *     [{"id": "cron_1a2b3c4d", "cron": "0 9 * * 1-5", "prompt": "…", "recurring": true,
 *       "durable": true, "pending_delivery": false, "last_fired": "2026-03-02 09:00"}]
 *
 *   change = change the jobs in memory ──> save the whole file (temp file + rename)
 *            a failed save puts every job back as it was, and the caller hears why
 *
 * A file that cannot be read, is not JSON or is not an array is reported, nothing is
 * loaded from it and it is never rewritten: durable jobs are refused until it is fixed or
 * moved, session jobs still work. An item of a valid array that is not a job is reported,
 * skipped, and written back as it was by every later save.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { HARNESS_DIR, harnessPath, readJsonState, writeFileAtomic } from "shared";
import { cronError, tidyCron } from "./cron-parse.ts";

/** The file as messages name it, relative to the workspace. */
export const CRON_FILE = `${HARNESS_DIR}/cron.json`;
export const CRON_ID = /^cron_[A-Za-z0-9_-]+$/;
export const MAX_ID_ATTEMPTS = 100;
/** `last_fired`: the local minute, `YYYY-MM-DD HH:MM`. */
const MINUTE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/;
const KEYS = ["id", "cron", "prompt", "recurring", "durable", "pending_delivery", "last_fired"];

export interface CronJob {
  /** `cron_` + 8 hex characters. */
  id: string;
  /** Five fields, one space apart, as the model wrote them. */
  cron: string;
  prompt: string;
  /** false: a one-shot job, removed once its prompt was delivered. */
  recurring: boolean;
  /** true: kept in .harness/cron.json across restarts; false: this session only. */
  durable: boolean;
  /** Due and not yet acknowledged: a job has at most one undelivered firing. */
  pending_delivery: boolean;
  /** The local minute it last became due, or null. */
  last_fired: string | null;
}

/** A refusal the model can act on; the tools print it as `Error: <message>`. */
export class CronStoreError extends Error {}

/** Why `value` is not a saved job (or a job already loaded), or the job. */
export function savedJob(value: unknown, taken: Set<string>): CronJob | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "not a JSON object";
  }
  const item = value as Record<string, unknown>;
  const unknown = Object.keys(item).find((key) => !KEYS.includes(key));
  if (unknown !== undefined) return `unknown key '${unknown}'`;
  const id = item.id;
  if (typeof id !== "string" || !CRON_ID.test(id)) {
    return `id must be a string starting with cron_ (got ${JSON.stringify(id)})`;
  }
  const where = (problem: string) => `${id}: ${problem}`;
  if (taken.has(id)) return where("duplicate id");
  if (typeof item.cron !== "string") return where("cron must be a string");
  const invalid = cronError(item.cron);
  if (invalid) return where(`cron '${item.cron}': ${invalid}`);
  if (typeof item.prompt !== "string" || !item.prompt.trim()) {
    return where("prompt must be a non-empty string");
  }
  if (typeof item.recurring !== "boolean") return where("recurring must be true or false");
  if (item.durable !== true) return where("durable must be true in the durable file");
  if (item.pending_delivery !== undefined && typeof item.pending_delivery !== "boolean") {
    return where("pending_delivery must be true or false");
  }
  const fired = item.last_fired ?? null;
  if (fired !== null && (typeof fired !== "string" || !MINUTE.test(fired))) {
    return where("last_fired must be null or 'YYYY-MM-DD HH:MM'");
  }
  return {
    id,
    cron: tidyCron(item.cron),
    prompt: item.prompt,
    recurring: item.recurring,
    durable: true,
    pending_delivery: item.pending_delivery === true,
    last_fired: fired,
  };
}

export interface LoadReport {
  /** The jobs this load added, in file order. */
  loaded: CronJob[];
  /** One line per item that is not a job: `<why>`. */
  skipped: string[];
}

export interface CronStoreOptions {
  /** The 8 hex characters of a new ID (tests force collisions with it). */
  newId?: () => string;
}

/** An entry of the durable file: a loaded job (by ID) or an item kept as it was. */
type Entry = { id: string } | { raw: unknown };

export class CronStore {
  readonly workdir: string;
  /** Every job of the session, in the order it was added. */
  readonly jobs = new Map<string, CronJob>();
  /** Why .harness/cron.json could not be loaded; null when it could (or does not exist). */
  corrupt: string | null = null;
  /** The durable file's order: jobs by ID, invalid items verbatim. */
  private entries: Entry[] = [];
  private readonly newId: () => string;

  constructor(workdir: string, options: CronStoreOptions = {}) {
    this.workdir = workdir;
    this.newId = options.newId ?? (() => randomBytes(4).toString("hex"));
  }

  get file(): string {
    return path.join(this.workdir, CRON_FILE);
  }

  /**
   * Reads the durable file and adds its jobs: at start, and again while it is corrupt (so a
   * fixed file works without a restart). A missing file is no jobs; an unreadable one sets
   * `corrupt` and adds nothing (the file is left as it is).
   */
  load(): LoadReport {
    const report: LoadReport = { loaded: [], skipped: [] };
    const read = readJsonState<unknown[]>(this.file, (value) =>
      Array.isArray(value) ? null : "not a JSON array",
    );
    if (read.status !== "ok") {
      // readJsonState starts its reason with the path; the [cron] line names the file itself.
      this.corrupt = read.status === "corrupt" ? read.error.slice(this.file.length + 2) : null;
      return report;
    }
    this.corrupt = null;
    const taken = new Set(this.jobs.keys());
    const entries: Entry[] = [];
    for (const item of read.value) {
      const job = savedJob(item, taken);
      if (typeof job === "string") {
        report.skipped.push(job);
        entries.push({ raw: item });
        continue;
      }
      taken.add(job.id);
      this.jobs.set(job.id, job);
      entries.push({ id: job.id });
      report.loaded.push(job);
    }
    // Loaded at start, or again while the file was corrupt: no durable entries exist yet.
    this.entries = entries;
    return report;
  }

  /** A fresh ID, drawn again while it is taken. */
  allocateId(): string {
    const taken = new Set([...this.jobs.keys(), ...this.rawIds()]);
    for (let i = 0; i < MAX_ID_ATTEMPTS; i++) {
      const id = `cron_${this.newId()}`;
      if (!taken.has(id)) return id;
    }
    throw new CronStoreError("Could not allocate a cron job ID");
  }

  /** Adds a job (saved first when durable). */
  add(job: CronJob): void {
    this.change(job.durable, () => {
      this.jobs.set(job.id, job);
      if (job.durable) this.entries.push({ id: job.id });
    });
  }

  /** Removes a job (saved when durable); false when there is no such job. */
  remove(id: string): boolean {
    const job = this.jobs.get(id);
    if (!job) return false;
    this.change(job.durable, () => this.delete(id));
    return true;
  }

  /** Inside `change`: drops a job from memory and from the file's order. */
  delete(id: string): void {
    this.jobs.delete(id);
    this.entries = this.entries.filter((entry) => !("id" in entry) || entry.id !== id);
  }

  /**
   * Runs `work`, which changes jobs in memory, then saves when `durable`. If the save fails,
   * every job (the same objects, so a queue holding them stays right) is put back as it
   * was, and the error is thrown.
   */
  change<T>(durable: boolean, work: () => T): T {
    if (durable) this.checkWritable();
    const before = [...this.jobs.values()].map((job) => ({ job, copy: { ...job } }));
    const entries = [...this.entries];
    const result = work();
    if (!durable) return result;
    try {
      this.save();
    } catch (error) {
      this.jobs.clear();
      for (const { job, copy } of before) this.jobs.set(job.id, Object.assign(job, copy));
      this.entries = entries;
      throw error;
    }
    return result;
  }

  /** Refuses a durable change while the file could not be loaded. */
  checkWritable(): void {
    if (this.corrupt !== null) {
      throw new CronStoreError(
        `${CRON_FILE} is unreadable (${this.corrupt}); fix or move it to use durable jobs`,
      );
    }
  }

  /** The whole durable file, written atomically. */
  private save(): void {
    const items = this.entries.flatMap((entry) => {
      if ("raw" in entry) return [entry.raw];
      const job = this.jobs.get(entry.id);
      if (!job?.durable) return [];
      return [Object.fromEntries(KEYS.map((key) => [key, job[key as keyof CronJob]]))];
    });
    try {
      writeFileAtomic(
        harnessPath(this.workdir, "cron.json"),
        `${JSON.stringify(items, null, 2)}\n`,
      );
    } catch (error) {
      throw new CronStoreError(`could not save ${CRON_FILE}: ${(error as Error).message}`);
    }
  }

  private rawIds(): string[] {
    return this.entries.flatMap((entry) => {
      if (!("raw" in entry)) return [];
      const id = (entry.raw as { id?: unknown } | null)?.id;
      return typeof id === "string" ? [id] : [];
    });
  }
}
