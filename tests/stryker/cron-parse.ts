import { mutationRun } from "./config.ts";

// The parser's own tests and the scheduler's: delivery through a running chapter adds only
// time (27 s of a 30 s dry run) and no caught mutant.
export default mutationRun(["cron.test.ts"], /expressions|the store and the scheduler/);
