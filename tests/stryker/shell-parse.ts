import { mutationRun } from "./config.ts";

export default mutationRun(["permissions.test.ts", "properties.test.ts"]);
