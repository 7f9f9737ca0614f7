import { mutationRun } from "./base.mjs";

export default mutationRun("cron-parse", "chapters/s12-cron/src/cron-parse.ts");
