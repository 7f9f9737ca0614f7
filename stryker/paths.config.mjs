import { mutationRun } from "./base.mjs";

export default mutationRun("paths", "chapters/s02-tools/src/paths.ts");
