import { afterAll } from "vitest";
import { removeTempWorkspaces } from "./helpers/run.ts";

// Every run makes hundreds of small workspaces: each test file removes its own at the end.
afterAll(removeTempWorkspaces);
