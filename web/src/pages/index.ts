// Every page of the console, in the order of the navigation. A page is a
// folder beside this file; list its export here (docs/console.md).
import { approvals } from "./approvals";
import { executions } from "./executions";
import { holds } from "./holds";
import { home } from "./home";
import { inputs } from "./inputs";
import { journal } from "./journal";
import { keys } from "./keys";
import type { Page } from "./page";
import { run } from "./run";
import { session } from "./session";
import { sessions } from "./sessions";
import { supervisor, supervisors } from "./supervisors";
import { workers } from "./workers";

export const pages: Page[] = [home, sessions, session, executions, run, journal, holds, inputs, approvals, supervisors, supervisor, workers, keys];
