// "/" opens the sessions.
import { useEffect } from "preact/hooks";
import { navigate } from "../../app/router";
import type { Page } from "../page";

export const home: Page = {
  path: "/",
  title: "Yukta",
  component: () => {
    useEffect(() => navigate("/sessions", true), []);
    return <p class="muted">Opening the sessions…</p>;
  },
};
