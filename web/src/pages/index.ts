// Every page of the console, in the order of the navigation. A page is a
// folder beside this file; list its export here (docs/console.md).
import { approvals } from "./approvals";
import { holds } from "./holds";
import { home } from "./home";
import { inputs } from "./inputs";
import type { Page } from "./page";
import { sessions } from "./sessions";
import { supervisor, supervisors } from "./supervisors";

export const pages: Page[] = [home, sessions, inputs, approvals, supervisors, supervisor, holds];
