import { mutationRun } from "./base.mjs";

export default mutationRun("shell-parse", "chapters/s03-permissions/src/shell-parse.ts");
