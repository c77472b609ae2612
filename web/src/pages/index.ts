// Every page of the console, in the order of the navigation. A page is a
// folder beside this file; list its export here (docs/console.md).
import { home } from "./home";
import type { Page } from "./page";
import { run } from "./run";
import { sessions } from "./sessions";

export const pages: Page[] = [home, sessions, run];
