import { mutationRun } from "./config.ts";

export default mutationRun(["tools.test.ts", "properties.test.ts"]);
