// What a page declares: where it lives (a pattern shaped like its REST
// path), its title, and whether it is in the navigation. To add a page,
// make a folder here with an index.tsx exporting a Page, and list it in
// pages/index.ts (docs/console.md).
import type { JSX } from "preact";
import type { Role } from "../app/auth";

export interface PageProps {
  params: Record<string, string>;
  query: URLSearchParams;
}

export interface Page {
  path: string;
  title: string;
  /** nav puts the page in the top navigation under this label. */
  nav?: string;
  /** role is the least role that may open it (VIEWER when absent). */
  role?: Role;
  component: (props: PageProps) => JSX.Element;
}
